/*
 * What the two examples share: the clocks, hex keys, and one round of a Sprout connection
 * over a UDP socket (read what arrived, run the timers, send what Sprout lets out).
 */
#ifndef SPROUT_EXAMPLE_COMMON_H
#define SPROUT_EXAMPLE_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "sprout.h"

/* Microseconds on the monotonic clock: the time every sprout_conn_* call takes. */
static inline uint64_t monotonic_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Microseconds since the Unix epoch: the send time carried by each message (the receiver
 * reads the same clock; on two hosts it needs synchronised clocks, as `sprout client`). */
static inline uint64_t realtime_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Prints why the last call failed and exits. */
static inline void die(const char *what) {
    char why[256];
    sprout_last_error(why, sizeof why);
    fprintf(stderr, "%s failed: %s\n", what, why);
    exit(1);
}

static inline void key_to_hex(const uint8_t key[SPROUT_KEY_BYTES], char out[2 * SPROUT_KEY_BYTES + 1]) {
    for (int i = 0; i < SPROUT_KEY_BYTES; i++) snprintf(out + 2 * i, 3, "%02x", key[i]);
}

/* 0 when `hex` is 64 hex digits, written into `key`. */
static inline int key_from_hex(const char *hex, uint8_t key[SPROUT_KEY_BYTES]) {
    if (strlen(hex) != 2 * SPROUT_KEY_BYTES) return -1;
    for (int i = 0; i < SPROUT_KEY_BYTES; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
        key[i] = (uint8_t)v;
    }
    return 0;
}

static const char BASE64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The key as standard base64, 44 characters with the padding (as `sprout server` prints its
 * public key and `sprout client --server-key` takes one). */
static inline void key_to_base64(const uint8_t key[SPROUT_KEY_BYTES], char out[45]) {
    size_t o = 0;
    for (int i = 0; i < SPROUT_KEY_BYTES; i += 3) {
        uint32_t v = (uint32_t)key[i] << 16;
        if (i + 1 < SPROUT_KEY_BYTES) v |= (uint32_t)key[i + 1] << 8;
        if (i + 2 < SPROUT_KEY_BYTES) v |= key[i + 2];
        out[o++] = BASE64[(v >> 18) & 63];
        out[o++] = BASE64[(v >> 12) & 63];
        out[o++] = i + 1 < SPROUT_KEY_BYTES ? BASE64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < SPROUT_KEY_BYTES ? BASE64[v & 63] : '=';
    }
    out[o] = 0;
}

/* 0 when `text` is a key as 64 hex digits or as 44 characters of base64, written into `key`. */
static inline int key_from_text(const char *text, uint8_t key[SPROUT_KEY_BYTES]) {
    if (key_from_hex(text, key) == 0) return 0;
    if (strlen(text) != 44 || text[43] != '=') return -1;
    uint8_t bytes[33];
    size_t n = 0;
    for (int i = 0; i < 44; i += 4) {
        uint32_t v = 0;
        for (int j = 0; j < 4; j++) {
            /* The padding '=' (the last character) stands for zero bits. */
            const char *at = i + j == 43 ? BASE64 : strchr(BASE64, text[i + j]);
            if (at == NULL) return -1;
            v = v << 6 | (uint32_t)(at - BASE64);
        }
        bytes[n++] = (uint8_t)(v >> 16);
        bytes[n++] = (uint8_t)(v >> 8);
        bytes[n++] = (uint8_t)v;
    }
    memcpy(key, bytes, SPROUT_KEY_BYTES);
    return 0;
}

/* Feeds every datagram waiting on `fd` into `conn`; the source of the last one goes into
 * `from` (when not NULL: a server answers there). */
static inline void read_datagrams(int fd, SproutConn *conn, struct sockaddr_storage *from,
                                  socklen_t *from_len) {
    uint8_t buf[65536];
    for (;;) {
        struct sockaddr_storage src;
        socklen_t src_len = sizeof src;
        ssize_t n = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&src, &src_len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return; /* EAGAIN: nothing more; other errors (ICMP refusals) are skipped */
        }
        if (sprout_conn_recv(conn, monotonic_us(), buf, (size_t)n) != SPROUT_STATUS_OK)
            die("sprout_conn_recv");
        if (from) {
            *from = src;
            *from_len = src_len;
        }
    }
}

/* Runs the timers if due, then sends every datagram Sprout lets out now: to `to`, or on the
 * connected socket if `to` is NULL. */
static inline void timers_and_send(int fd, SproutConn *conn, const struct sockaddr *to,
                                   socklen_t to_len) {
    uint64_t deadline;
    if (sprout_conn_deadline(conn, &deadline) != SPROUT_STATUS_OK) die("sprout_conn_deadline");
    uint64_t now = monotonic_us();
    if (deadline <= now && sprout_conn_on_timeout(conn, now) != SPROUT_STATUS_OK)
        die("sprout_conn_on_timeout");
    uint8_t d[SPROUT_MAX_DATAGRAM_BYTES];
    size_t len;
    SproutStatus st;
    while ((st = sprout_conn_poll_transmit(conn, now, d, sizeof d, &len)) == SPROUT_STATUS_OK) {
        /* UDP: a datagram the socket refuses is lost, as on the path; Sprout copes. */
        if (to) sendto(fd, d, len, 0, to, to_len);
        else send(fd, d, len, 0);
    }
    if (st != SPROUT_STATUS_DONE) die("sprout_conn_poll_transmit");
}

/* Milliseconds poll() may sleep until `deadline_us` (monotonic), rounded up, at most 1 s. */
static inline int poll_ms_until(uint64_t deadline_us) {
    uint64_t now = monotonic_us();
    if (deadline_us <= now) return 0;
    uint64_t ms = (deadline_us - now + 999) / 1000;
    return ms > 1000 ? 1000 : (int)ms;
}

#endif
