/*
 * A paced Sprout sender: connects to a receiver (examples/c/receiver.c) and sends messages of
 * PAYLOAD bytes at RATE kbit/s of application data for SECONDS, each stamped with its send
 * time; prints once a second what it sent and Sprout's window. Plain POSIX: a UDP socket and
 * poll(), the sans-IO Sprout connection of libsprout in between.
 *
 *   cc -I crates/libsprout/include examples/c/sender.c -L target/release -lsprout -o sender
 *   ./sender 127.0.0.1 9000 SERVER_PUBLIC_KEY_HEX 1000 10 [PAYLOAD]
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include "common.h"

static uint64_t now_plus_10ms(void) { return monotonic_us() + 10000; }

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST PORT SERVER_PUBLIC_KEY_HEX RATE_KBPS SECONDS [PAYLOAD_BYTES]\n", argv[0]);
        return 2;
    }
    uint8_t server_public[SPROUT_KEY_BYTES], key[SPROUT_KEY_BYTES], public_key[SPROUT_KEY_BYTES];
    if (key_from_hex(argv[3], server_public) != 0) {
        fprintf(stderr, "the server's public key must be 64 hex digits\n");
        return 2;
    }
    double rate_kbps = atof(argv[4]), seconds = atof(argv[5]);
    size_t payload = argc > 6 ? (size_t)atoi(argv[6]) : 1000;
    if (rate_kbps <= 0 || seconds <= 0 || payload == 0) {
        fprintf(stderr, "RATE_KBPS, SECONDS and PAYLOAD_BYTES must be above 0\n");
        return 2;
    }

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *peer;
    int err = getaddrinfo(argv[1], argv[2], &hints, &peer);
    if (err != 0) {
        fprintf(stderr, "%s:%s: %s\n", argv[1], argv[2], gai_strerror(err));
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
    if (sprout_conn_new_client(key, server_public, NULL, 0, monotonic_us(), &conn) != SPROUT_STATUS_OK)
        die("sprout_conn_new_client");
    if (payload > sprout_conn_max_message(conn)) payload = sprout_conn_max_message(conn);
    uint64_t interval_us = (uint64_t)(payload * 8 * 1000.0 / rate_kbps);

    uint8_t *message = calloc(payload, 1);
    uint64_t start = 0, next_message = 0, next_report = 0, end = 0, sent = 0, sent_last = 0;
    int connected = 0, closed = 0, closing = 0;
    while (!closed) {
        uint64_t deadline;
        if (sprout_conn_deadline(conn, &deadline) != SPROUT_STATUS_OK) die("sprout_conn_deadline");
        if (connected && !end && next_message < deadline) deadline = next_message;
        if (connected && !end && next_report < deadline) deadline = next_report;
        if (end && !closing && now_plus_10ms() < deadline) deadline = now_plus_10ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, poll_ms_until(deadline));
        read_datagrams(fd, conn, NULL, NULL);

        SproutEvent ev;
        while (sprout_conn_poll_event(conn, &ev) == SPROUT_STATUS_OK) {
            if (ev == SPROUT_EVENT_CONNECTED && !connected) {
                connected = 1;
                start = next_message = monotonic_us();
                next_report = start + 1000000;
            } else if (ev == SPROUT_EVENT_CLOSED) {
                char why[256];
                sprout_conn_end_reason(conn, why, sizeof why);
                fprintf(stderr, "sender: connection closed: %s\n", why);
                return 1;
            }
        }
        uint64_t now = monotonic_us();
        /* The paced stream: every message that is due, stamped now. */
        while (connected && !end && next_message <= now) {
            if (sprout_conn_send(conn, realtime_us(), message, payload) != SPROUT_STATUS_OK)
                die("sprout_conn_send");
            sent++;
            next_message += interval_us;
        }
        /* Time is up: no more messages; close once what is queued has left (at most 2 s). */
        if (connected && !end && now >= start + (uint64_t)(seconds * 1e6)) end = now;
        if (end && !closing) {
            SproutStats st;
            if (sprout_conn_stats(conn, now, &st) != SPROUT_STATUS_OK) die("sprout_conn_stats");
            if (st.queued_bytes == 0 || now >= end + 2000000) {
                if (sprout_conn_close(conn, now) != SPROUT_STATUS_OK) die("sprout_conn_close");
                closing = 1;
            }
        }
        if (connected && !end && now >= next_report) {
            SproutStats st;
            if (sprout_conn_stats(conn, now, &st) != SPROUT_STATUS_OK) die("sprout_conn_stats");
            printf("sender %2llu s: %6.0f kbit/s sent, window %llu bytes, queued %llu bytes\n",
                   (unsigned long long)((now - start + 500000) / 1000000),
                   (double)(sent - sent_last) * payload * 8 / 1000.0,
                   (unsigned long long)st.window_bytes, (unsigned long long)st.queued_bytes);
            fflush(stdout);
            sent_last = sent;
            next_report += 1000000;
        }
        /* Sends what Sprout lets out (after a close: the close's copies, then nothing). */
        timers_and_send(fd, conn, NULL, 0);
        if (closing) closed = 1;
    }
    printf("sender: %llu messages of %zu bytes sent\n", (unsigned long long)sent, payload);
    free(message);
    sprout_conn_free(conn);
    freeaddrinfo(peer);
    close(fd);
    return 0;
}
