/*
 * Sprout with the library's sockets: no UDP socket, no clock and no timer of our own, only
 * the sprout_socket_* calls and poll() on the descriptors they hand out.
 *
 *   cc -I crates/libsprout/include examples/c/socket_echo.c -L target/release -lsprout -o socket_echo
 *   ./socket_echo server ADDR [SESSIONS]
 *   ./socket_echo client [--hello] [--scheme S] ADDR SERVER_KEY COUNT RATE_KBPS [MESSAGE_BYTES]
 *
 * server: binds ADDR (e.g. 127.0.0.1:0), prints its address and public key, echoes every
 *   message of every session back, and prints, when a session ends, how many messages it got
 *   and their delay's 95th percentile; exits after SESSIONS sessions (default 1).
 * client: sends COUNT messages of MESSAGE_BYTES (default 500, its SPROUT_DATA_HEADER_BYTES
 *   included, as `sprout client --payload` counts) at RATE_KBPS to the server at ADDR whose
 *   public key is SERVER_KEY (64 hex digits or base64), and prints how many came back and
 *   the echoes' delay p95. --hello: greet the server as `sprout client --direction up`
 *   does and end with a BYE, for `sprout server` (which echoes nothing; it prints what it got
 *   and ends the session). The HELLO names the Sprout configuration of both ends: --scheme
 *   (sprout, sprout-ewma or sprout-wide; default sprout-wide, as `sprout client`) implies it.
 */
#include <poll.h>

#include "common.h"

#define MAX_SESSIONS 64

static int usage(void) {
    fprintf(stderr, "usage: socket_echo server ADDR [SESSIONS]\n"
                    "       socket_echo client [--hello] [--scheme sprout|sprout-ewma|sprout-wide] "
                    "ADDR SERVER_KEY COUNT RATE_KBPS [MESSAGE_BYTES]\n");
    return 2;
}

static int by_value(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The 95th percentile of `n` delays (sorted in place), in milliseconds; 0 when n is 0. */
static double p95_ms(int64_t *delays, size_t n) {
    if (n == 0) return 0;
    qsort(delays, n, sizeof *delays, by_value);
    return (double)delays[(n * 95 + 99) / 100 - 1] / 1000.0;
}

struct session {
    SproutSocket *socket;
    int64_t *delays;
    size_t count, cap;
};

/* Reads every message waiting on `s`, echoing each back; 1 once the session has ended. */
static int serve(struct session *s, uint8_t *buf, size_t cap) {
    SproutSocketMessage m;
    SproutStatus st;
    while ((st = sprout_socket_recv(s->socket, &m, buf, cap)) == SPROUT_STATUS_OK) {
        if (m.kind != SPROUT_MESSAGE_KIND_DATA) continue;
        if (s->count == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 1024;
            s->delays = realloc(s->delays, s->cap * sizeof *s->delays);
            if (!s->delays) exit(1);
        }
        s->delays[s->count++] = m.delay_us;
        /* A full queue or a closing peer only loses the echo. */
        sprout_socket_send(s->socket, buf, m.len);
    }
    if (st == SPROUT_STATUS_DONE) return 0;
    if (st != SPROUT_STATUS_CLOSED) die("sprout_socket_recv");
    printf("server: %zu messages, delay p95 %.1f ms\n", s->count, p95_ms(s->delays, s->count));
    fflush(stdout);
    sprout_socket_free(s->socket);
    free(s->delays);
    return 1;
}

static int server(const char *addr, int sessions) {
    uint8_t key[SPROUT_KEY_BYTES], public_key[SPROUT_KEY_BYTES];
    if (sprout_keygen(key, public_key) != SPROUT_STATUS_OK) die("sprout_keygen");
    SproutSocketServer *srv;
    if (sprout_socket_bind(addr, key, NULL, &srv) != SPROUT_STATUS_OK) die("sprout_socket_bind");
    char local[64], hex[2 * SPROUT_KEY_BYTES + 1], b64[45];
    sprout_socket_server_local_addr(srv, local, sizeof local);
    key_to_hex(public_key, hex);
    key_to_base64(public_key, b64);
    printf("socket_echo server on %s key %s base64 %s\n", local, hex, b64);
    fflush(stdout);

    struct session live[MAX_SESSIONS];
    int n = 0, ended = 0;
    uint8_t buf[SPROUT_MAX_DATAGRAM_BYTES];
    while (ended < sessions) {
        struct pollfd p[MAX_SESSIONS + 1];
        p[0] = (struct pollfd){.fd = sprout_socket_server_fd(srv), .events = POLLIN};
        for (int i = 0; i < n; i++)
            p[i + 1] = (struct pollfd){.fd = sprout_socket_fd(live[i].socket), .events = POLLIN};
        if (poll(p, (nfds_t)n + 1, -1) < 0 && errno != EINTR) return 1;
        SproutSocket *s;
        while (n < MAX_SESSIONS && sprout_socket_accept(srv, &s) == SPROUT_STATUS_OK)
            live[n++] = (struct session){.socket = s};
        for (int i = 0; i < n;) {
            if (serve(&live[i], buf, sizeof buf)) {
                live[i] = live[--n];
                ended++;
            } else {
                i++;
            }
        }
    }
    sprout_socket_server_free(srv);
    return 0;
}

/* The HELLO of a paced upload, as `sprout client --direction up` sends it. */
static size_t hello(int scheme, double rate_kbps, uint64_t duration_ms, size_t message_bytes,
                    uint8_t out[SPROUT_HELLO_BYTES]) {
    SproutHello h = {
        .session = realtime_us(),
        .direction = SPROUT_DIRECTION_UP,
        .mode = SPROUT_MODE_PACED,
        .scheme = (uint8_t)scheme,
        .confidence = 0.95,
        .rate_kbps = (uint32_t)(rate_kbps + 0.5),
        .duration_ms = (uint32_t)duration_ms,
        .payload_bytes = (uint16_t)message_bytes,
    };
    size_t len;
    if (sprout_hello_encode(&h, out, SPROUT_HELLO_BYTES, &len) != SPROUT_STATUS_OK)
        die("sprout_hello_encode");
    return len;
}

static int client(int scheme, const char *addr, const char *server_key, long count,
                  double rate_kbps, size_t message_bytes) {
    uint8_t server_public[SPROUT_KEY_BYTES];
    if (key_from_text(server_key, server_public) != 0) return usage();
    uint64_t interval_us = (uint64_t)(message_bytes * 8 * 1000.0 / rate_kbps);
    uint8_t greeting[SPROUT_HELLO_BYTES];
    int with_hello = scheme >= 0;
    size_t greeting_len =
        with_hello ? hello(scheme, rate_kbps, count * interval_us / 1000 + 1, message_bytes, greeting)
                   : 0;
    SproutSocket *s;
    /* NULL private key: a fresh key pair (the server lets any client in). */
    if (sprout_socket_connect(addr, server_public, NULL, greeting, greeting_len, &s) !=
        SPROUT_STATUS_OK)
        die("sprout_socket_connect");
    size_t payload = message_bytes - SPROUT_DATA_HEADER_BYTES;
    if (payload > sprout_socket_max_message(s)) payload = sprout_socket_max_message(s);
    uint8_t *message = calloc(payload + 1, 1), buf[SPROUT_MAX_DATAGRAM_BYTES];
    int64_t *delays = calloc((size_t)count + 1, sizeof *delays);
    if (!message || !delays) return 1;

    long sent = 0;
    size_t echoed = 0;
    uint64_t start = monotonic_us(), stop = 0;
    int closed = 0;
    while (!closed) {
        uint64_t now = monotonic_us();
        while (sent < count && start + (uint64_t)sent * interval_us <= now) {
            if (sprout_socket_send(s, message, payload) != SPROUT_STATUS_OK)
                die("sprout_socket_send");
            sent++;
        }
        if (sent == count && !stop) {
            if (with_hello && sprout_socket_send_bye(s) != SPROUT_STATUS_OK)
                die("sprout_socket_send_bye");
            stop = now + 5000000; /* time for the echoes (`sprout server` closes at once) */
        }
        if (stop && (now >= stop || echoed == (size_t)count)) break;
        uint64_t wake = stop ? stop : start + (uint64_t)sent * interval_us;
        struct pollfd p = {.fd = sprout_socket_fd(s), .events = POLLIN};
        poll(&p, 1, poll_ms_until(wake));
        SproutSocketMessage m;
        SproutStatus st;
        while ((st = sprout_socket_recv(s, &m, buf, sizeof buf)) == SPROUT_STATUS_OK)
            if (m.kind == SPROUT_MESSAGE_KIND_DATA && echoed < (size_t)count)
                delays[echoed++] = m.delay_us;
        if (st == SPROUT_STATUS_CLOSED) closed = 1;
        else if (st != SPROUT_STATUS_DONE) die("sprout_socket_recv");
    }
    SproutStats stats;
    if (sprout_socket_stats(s, &stats) != SPROUT_STATUS_OK) die("sprout_socket_stats");
    /* Let what is queued (the BYE) leave, at most 1 s, then tell the server. */
    sprout_socket_close(s, 1000);
    char why[128] = "";
    if (closed) sprout_socket_end_reason(s, why, sizeof why);
    printf("client: sent %ld messages, %zu echoed, echo delay p95 %.1f ms, %llu datagrams "
           "sent%s%s\n",
           sent, echoed, p95_ms(delays, echoed), (unsigned long long)stats.datagrams_sent,
           closed ? ", closed: " : "", why);
    sprout_socket_free(s);
    free(message);
    free(delays);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "server") == 0)
        return server(argv[2], argc > 3 ? atoi(argv[3]) : 1);
    if (argc < 2 || strcmp(argv[1], "client") != 0) return usage();
    int a = 2, scheme = -1; /* -1: no HELLO */
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--hello") == 0) {
            if (scheme < 0) scheme = SPROUT_SCHEME_SPROUT_WIDE;
        } else if (strcmp(argv[a], "--scheme") == 0 && a + 1 < argc) {
            const char *name = argv[++a];
            if (strcmp(name, "sprout") == 0) scheme = SPROUT_SCHEME_SPROUT;
            else if (strcmp(name, "sprout-ewma") == 0) scheme = SPROUT_SCHEME_SPROUT_EWMA;
            else if (strcmp(name, "sprout-wide") == 0) scheme = SPROUT_SCHEME_SPROUT_WIDE;
            else return usage();
        } else {
            return usage();
        }
    }
    if (argc - a < 4) return usage();
    long count = atol(argv[a + 2]);
    double rate = atof(argv[a + 3]);
    size_t bytes = argc - a > 4 ? (size_t)atol(argv[a + 4]) : 500;
    if (count <= 0 || rate <= 0 || bytes < SPROUT_DATA_HEADER_BYTES || bytes > 65535) return usage();
    return client(scheme, argv[a], argv[a + 1], count, rate, bytes);
}
