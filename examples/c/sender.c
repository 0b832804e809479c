/*
 * A paced Sprout sender: connects to a receiver (examples/c/receiver.c, or `sprout server`
 * with --hello) and sends messages of MESSAGE_BYTES at RATE kbit/s for SECONDS, each stamped
 * with its send time; prints once a second what it sent and Sprout's window. Plain POSIX: a
 * UDP socket and poll(), the sans-IO Sprout connection of libsprout in between.
 *
 * Sizes and rates count each message as it travels, its SPROUT_DATA_HEADER_BYTES (sequence
 * number, send time) included, as `sprout client --rate RATE --payload MESSAGE_BYTES` counts
 * them.
 *
 *   cc -I crates/libsprout/include examples/c/sender.c -L target/release -lsprout -o sender
 *   ./sender [--hello] [--scheme S] [--confidence P] [--start-at US] HOST PORT SERVER_KEY
 *            RATE_KBPS SECONDS [MESSAGE_BYTES]
 *
 * SERVER_KEY: the server's public key, 64 hex digits (as receiver.c prints it) or base64 (as
 * `sprout server` prints it).
 * --start-at US: begin the stream once connected and CLOCK_REALTIME reaches US (microseconds
 *   since the Unix epoch; at once if later), to line a run up with another.
 * --hello: greet the server with a HELLO as `sprout client --direction up` does (`sprout
 *   server` refuses a session without one), and end the data with a BYE. The HELLO chooses
 *   the Sprout configuration of both ends: --scheme (sprout, sprout-ewma or sprout-wide;
 *   default sprout-wide, as `sprout client`) and --confidence (default 0.95); either implies
 *   --hello. Without a HELLO both ends run Sprout on the paper's model at 0.95.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include "common.h"

static uint64_t now_plus_10ms(void) { return monotonic_us() + 10000; }

static int usage(const char *program) {
    fprintf(stderr,
            "usage: %s [--hello] [--scheme sprout|sprout-ewma|sprout-wide] [--confidence P] "
            "[--start-at US] HOST PORT SERVER_KEY RATE_KBPS SECONDS [MESSAGE_BYTES]\n",
            program);
    return 2;
}

/* The HELLO greeting of a paced upload (into `greeting`, its length returned). */
static size_t hello_greeting(int scheme, double confidence, double rate_kbps, double seconds,
                             size_t message_bytes, uint8_t greeting[SPROUT_HELLO_BYTES]) {
    SproutHello h = {
        .session = realtime_us(),
        .direction = SPROUT_DIRECTION_UP,
        .mode = SPROUT_MODE_PACED,
        .scheme = (uint8_t)scheme,
        .confidence = confidence,
        .rate_kbps = (uint32_t)(rate_kbps + 0.5),
        .duration_ms = (uint32_t)(seconds * 1000 + 0.5),
        .payload_bytes = (uint16_t)message_bytes,
    };
    size_t len;
    if (sprout_hello_encode(&h, greeting, SPROUT_HELLO_BYTES, &len) != SPROUT_STATUS_OK)
        die("sprout_hello_encode");
    return len;
}

int main(int argc, char **argv) {
    int hello = 0, scheme = SPROUT_SCHEME_SPROUT_WIDE;
    double confidence = 0.95;
    uint64_t start_at = 0;
    int a = 1;
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--hello") == 0) {
            hello = 1;
        } else if (strcmp(argv[a], "--scheme") == 0 && a + 1 < argc) {
            const char *s = argv[++a];
            if (strcmp(s, "sprout") == 0) scheme = SPROUT_SCHEME_SPROUT;
            else if (strcmp(s, "sprout-ewma") == 0) scheme = SPROUT_SCHEME_SPROUT_EWMA;
            else if (strcmp(s, "sprout-wide") == 0) scheme = SPROUT_SCHEME_SPROUT_WIDE;
            else return usage(argv[0]);
            hello = 1;
        } else if (strcmp(argv[a], "--start-at") == 0 && a + 1 < argc) {
            start_at = strtoull(argv[++a], NULL, 10);
        } else if (strcmp(argv[a], "--confidence") == 0 && a + 1 < argc) {
            confidence = atof(argv[++a]);
            hello = 1;
        } else {
            return usage(argv[0]);
        }
    }
    if (argc - a < 5) return usage(argv[0]);
    char **arg = argv + a;
    uint8_t server_public[SPROUT_KEY_BYTES], key[SPROUT_KEY_BYTES], public_key[SPROUT_KEY_BYTES];
    if (key_from_text(arg[2], server_public) != 0) {
        fprintf(stderr, "the server's public key must be 64 hex digits or 44 of base64\n");
        return 2;
    }
    double rate_kbps = atof(arg[3]), seconds = atof(arg[4]);
    size_t message_bytes = argc - a > 5 ? (size_t)atoi(arg[5]) : 1000;
    if (rate_kbps <= 0 || seconds <= 0 || message_bytes < SPROUT_DATA_HEADER_BYTES ||
        message_bytes > 65535) {
        fprintf(stderr, "RATE_KBPS and SECONDS must be above 0, MESSAGE_BYTES %d..65535\n",
                SPROUT_DATA_HEADER_BYTES);
        return 2;
    }

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *peer;
    int err = getaddrinfo(arg[0], arg[1], &hints, &peer);
    if (err != 0) {
        fprintf(stderr, "%s:%s: %s\n", arg[0], arg[1], gai_strerror(err));
        return 1;
    }
    int fd = socket(peer->ai_family, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, peer->ai_addr, peer->ai_addrlen) != 0) {
        perror("socket");
        return 1;
    }

    /* A fresh client key each run; a real application keeps one (and the server allows it). */
    if (sprout_keygen(key, public_key) != SPROUT_STATUS_OK) die("sprout_keygen");
    SproutConn *conn;
    uint8_t greeting[SPROUT_HELLO_BYTES];
    size_t greeting_len = 0;
    if (hello)
        greeting_len =
            hello_greeting(scheme, confidence, rate_kbps, seconds, message_bytes, greeting);
    if (sprout_conn_new_client(key, server_public, greeting, greeting_len, monotonic_us(), &conn) !=
        SPROUT_STATUS_OK)
        die("sprout_conn_new_client");
    size_t payload = message_bytes - SPROUT_DATA_HEADER_BYTES;
    if (payload > sprout_conn_max_message(conn)) payload = sprout_conn_max_message(conn);
    message_bytes = payload + SPROUT_DATA_HEADER_BYTES;
    uint64_t interval_us = (uint64_t)(message_bytes * 8 * 1000.0 / rate_kbps);

    uint8_t *message = calloc(payload + 1, 1);
    uint8_t *incoming = malloc(SPROUT_MAX_DATAGRAM_BYTES);
    uint64_t start = 0, next_message = 0, next_report = 0, end = 0, sent = 0, sent_last = 0;
    int connected = 0, closed = 0, closing = 0, status = 0;
    while (!closed) {
        uint64_t deadline;
        if (sprout_conn_deadline(conn, &deadline) != SPROUT_STATUS_OK) die("sprout_conn_deadline");
        if (connected && !end && next_message < deadline) deadline = next_message;
        if (connected && !end && next_report < deadline) deadline = next_report;
        if (end && !closing && now_plus_10ms() < deadline) deadline = now_plus_10ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, poll_ms_until(deadline));
        read_datagrams(fd, conn, NULL, NULL);
        /* What the server sends (its ACCEPT and BYE) is read and let go. */
        SproutMessage m;
        while (sprout_conn_read(conn, &m, incoming, SPROUT_MAX_DATAGRAM_BYTES) == SPROUT_STATUS_OK) {
        }

        SproutEvent ev;
        while (sprout_conn_poll_event(conn, &ev) == SPROUT_STATUS_OK) {
            if (ev == SPROUT_EVENT_CONNECTED && !connected) {
                connected = 1;
                uint64_t now = monotonic_us(), wall = realtime_us();
                start = next_message = now + (start_at > wall ? start_at - wall : 0);
                next_report = start + 1000000;
            } else if (ev == SPROUT_EVENT_CLOSED) {
                char why[256];
                sprout_conn_end_reason(conn, why, sizeof why);
                /* After the data ended, the server closing (on the BYE) is the normal end. */
                if (!end) {
                    fprintf(stderr, "sender: connection closed: %s\n", why);
                    status = 1;
                }
                closed = 1;
            }
        }
        if (closed) break;
        uint64_t now = monotonic_us();
        /* The paced stream: every message that is due, stamped now (from `start`). */
        while (connected && !end && now >= start && next_message <= now) {
            if (sprout_conn_send(conn, realtime_us(), message, payload) != SPROUT_STATUS_OK)
                die("sprout_conn_send");
            sent++;
            next_message += interval_us;
        }
        /* Time is up: no more messages (and a BYE after them, to `sprout server`); close once
         * what is queued has left (at most 2 s). */
        if (connected && !end && now >= start + (uint64_t)(seconds * 1e6)) {
            end = now;
            if (hello && sprout_conn_send_bye(conn) != SPROUT_STATUS_OK) die("sprout_conn_send_bye");
        }
        if (end && !closing) {
            SproutStats st;
            if (sprout_conn_stats(conn, now, &st) != SPROUT_STATUS_OK) die("sprout_conn_stats");
            if (st.queued_bytes == 0 || now >= end + 2000000) {
                if (sprout_conn_close(conn, now) != SPROUT_STATUS_OK) die("sprout_conn_close");
                closing = 1;
            }
        }
        if (connected && !end && now >= start && now >= next_report) {
            SproutStats st;
            if (sprout_conn_stats(conn, now, &st) != SPROUT_STATUS_OK) die("sprout_conn_stats");
            printf("sender %2llu s: %6.0f kbit/s sent, window %llu bytes, queued %llu bytes\n",
                   (unsigned long long)((now - start + 500000) / 1000000),
                   (double)(sent - sent_last) * message_bytes * 8 / 1000.0,
                   (unsigned long long)st.window_bytes, (unsigned long long)st.queued_bytes);
            fflush(stdout);
            sent_last = sent;
            next_report += 1000000;
        }
        /* Sends what Sprout lets out (after a close: the close's copies, then nothing). */
        timers_and_send(fd, conn, NULL, 0);
        if (closing) closed = 1;
    }
    printf("sender: %llu messages of %zu bytes sent\n", (unsigned long long)sent, message_bytes);
    free(message);
    free(incoming);
    sprout_conn_free(conn);
    freeaddrinfo(peer);
    close(fd);
    return status;
}
