/*
 * The sans-IO C API end to end, in memory: a client and a server connection, datagrams passed
 * between them by this program through two one-way pipes of 10 ms, a simulated clock in 1 ms
 * steps. Each side sends 200 messages of varying lengths; each checks every message it
 * receives (order, length, bytes, send time), then the client closes and the server sees it.
 * Also checks the error paths: NULL pointers, a message too long, a buffer too small, forged
 * datagrams. Exits 0 and prints "sansio_test: N passed, 0 failed" when every check passed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sprout.h"

static int passed = 0;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            char why_[256];                                                                \
            sprout_last_error(why_, sizeof why_);                                          \
            fprintf(stderr, "sansio_test: %s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, " (last error: %s)\n", why_);                                  \
            exit(1);                                                                       \
        }                                                                                  \
        passed++;                                                                          \
    } while (0)

#define MESSAGES 200
#define PIPE_DELAY_US 10000
#define PIPE_SLOTS 512

/* A one-way pipe: datagrams delivered PIPE_DELAY_US after they were sent. */
struct datagram {
    uint64_t due_us;
    size_t len;
    uint8_t bytes[SPROUT_MAX_DATAGRAM_BYTES];
};
struct pipe {
    struct datagram slots[PIPE_SLOTS];
    size_t head, count;
};

struct side {
    const char *name;
    SproutConn *conn;
    struct pipe *in, *out;
    int connected, closed;
    uint64_t sent, received, next_send_us;
};

static size_t message_len(uint64_t i) { return 10 + (i * 37) % 1000; }
static uint8_t message_byte(uint64_t i, size_t j, int from_client) {
    return (uint8_t)(i + j * 7 + (from_client ? 1 : 101));
}

static void push(struct pipe *p, uint64_t now_us, const uint8_t *d, size_t len) {
    CHECK(p->count < PIPE_SLOTS, "pipe full");
    struct datagram *slot = &p->slots[(p->head + p->count) % PIPE_SLOTS];
    slot->due_us = now_us + PIPE_DELAY_US;
    slot->len = len;
    memcpy(slot->bytes, d, len);
    p->count++;
}

/* One step of a side at now_us: what arrived, timers, events, the application, sends. */
static void step(struct side *s, uint64_t now_us, int from_client) {
    while (s->in->count > 0 && s->in->slots[s->in->head].due_us <= now_us) {
        struct datagram *d = &s->in->slots[s->in->head];
        CHECK(sprout_conn_recv(s->conn, now_us, d->bytes, d->len) == SPROUT_STATUS_OK, "recv");
        s->in->head = (s->in->head + 1) % PIPE_SLOTS;
        s->in->count--;
    }
    uint64_t deadline;
    CHECK(sprout_conn_deadline(s->conn, &deadline) == SPROUT_STATUS_OK, "deadline");
    if (deadline <= now_us) {
        CHECK(sprout_conn_on_timeout(s->conn, now_us) == SPROUT_STATUS_OK, "on_timeout");
    }
    SproutEvent ev;
    while (sprout_conn_poll_event(s->conn, &ev) == SPROUT_STATUS_OK) {
        if (ev == SPROUT_EVENT_CONNECTED) s->connected = 1;
        if (ev == SPROUT_EVENT_CLOSED) s->closed = 1;
    }
    if (s->connected && s->sent < MESSAGES && now_us >= s->next_send_us) {
        uint8_t m[1100];
        size_t n = message_len(s->sent);
        for (size_t j = 0; j < n; j++) m[j] = message_byte(s->sent, j, from_client);
        CHECK(sprout_conn_send(s->conn, now_us, m, n) == SPROUT_STATUS_OK, "send %s", s->name);
        s->sent++;
        s->next_send_us = now_us + 5000;
    }
    SproutMessage info;
    uint8_t buf[2048];
    while (sprout_conn_read(s->conn, &info, buf, sizeof buf) == SPROUT_STATUS_OK) {
        uint64_t i = s->received;
        CHECK(info.kind == SPROUT_MESSAGE_KIND_DATA, "%s: kind %d", s->name, (int)info.kind);
        CHECK(info.seq == i, "%s: message %llu has seq %llu", s->name, (unsigned long long)i,
              (unsigned long long)info.seq);
        CHECK(info.len == message_len(i), "%s: message %llu of %zu bytes", s->name,
              (unsigned long long)i, info.len);
        int same = 1;
        for (size_t j = 0; j < info.len; j++) same &= buf[j] == message_byte(i, j, !from_client);
        CHECK(same, "%s: message %llu's bytes differ", s->name, (unsigned long long)i);
        CHECK(info.sent_us + PIPE_DELAY_US <= now_us && now_us - info.sent_us < 1000000,
              "%s: message %llu sent at %llu us, read at %llu us", s->name,
              (unsigned long long)i, (unsigned long long)info.sent_us,
              (unsigned long long)now_us);
        s->received++;
    }
    uint8_t d[SPROUT_MAX_DATAGRAM_BYTES];
    size_t len;
    SproutStatus st;
    while ((st = sprout_conn_poll_transmit(s->conn, now_us, d, sizeof d, &len)) ==
           SPROUT_STATUS_OK) {
        push(s->out, now_us, d, len);
    }
    CHECK(st == SPROUT_STATUS_DONE, "%s: poll_transmit gave %d", s->name, (int)st);
}

static void check_errors(SproutConn *client) {
    char why[256];
    uint8_t buf[16];
    size_t len = 99;
    CHECK(sprout_conn_recv(NULL, 0, buf, 1) == SPROUT_STATUS_NULL_POINTER, "NULL conn");
    CHECK(sprout_last_error(why, sizeof why) > 0 && strstr(why, "conn is NULL"), "%s", why);
    CHECK(sprout_conn_recv(client, 0, NULL, 5) == SPROUT_STATUS_NULL_POINTER, "NULL data");
    CHECK(sprout_conn_recv(client, 0, NULL, 0) == SPROUT_STATUS_OK, "empty datagram");
    CHECK(sprout_conn_recv(client, 0, buf, (size_t)-1) == SPROUT_STATUS_INVALID_ARGUMENT,
          "impossible length");
    CHECK(sprout_conn_poll_transmit(client, 0, buf, sizeof buf, NULL) ==
              SPROUT_STATUS_NULL_POINTER,
          "NULL len");
    /* The handshake initiation does not fit 16 bytes: kept, then handed out whole. */
    CHECK(sprout_conn_poll_transmit(client, 0, buf, sizeof buf, &len) ==
              SPROUT_STATUS_BUFFER_TOO_SMALL && len > sizeof buf,
          "small buffer, len %zu", len);
    size_t needed = len;
    uint64_t deadline = 1;
    CHECK(sprout_conn_deadline(client, &deadline) == SPROUT_STATUS_OK && deadline == 0,
          "a kept datagram is due at once");
    uint8_t big[SPROUT_MAX_DATAGRAM_BYTES];
    CHECK(sprout_conn_poll_transmit(client, 0, big, sizeof big, &len) == SPROUT_STATUS_OK &&
              len == needed,
          "kept datagram, len %zu", len);
    CHECK(sprout_last_error(NULL, 0) > 0, "the message stays after a success");
    size_t max = sprout_conn_max_message(client);
    CHECK(max > 1000 && max < SPROUT_MAX_DATAGRAM_BYTES, "max message %zu", max);
    uint8_t *huge = calloc(max + 1, 1);
    CHECK(huge != NULL, "calloc");
    CHECK(sprout_conn_send(client, 0, huge, max + 1) == SPROUT_STATUS_TOO_LONG, "too long");
    free(huge);
    SproutConn *none = (SproutConn *)1;
    uint8_t key[SPROUT_KEY_BYTES] = {0};
    CHECK(sprout_conn_new_client(NULL, key, NULL, 0, 0, &none) == SPROUT_STATUS_NULL_POINTER &&
              none == (SproutConn *)1,
          "NULL key");
    uint8_t greeting[SPROUT_MAX_GREETING_BYTES + 1] = {0};
    CHECK(sprout_conn_new_client(key, key, greeting, sizeof greeting, 0, &none) ==
              SPROUT_STATUS_INVALID_ARGUMENT,
          "greeting too long");
    sprout_conn_free(NULL);
}

/* HELLOs: one as `sprout client` sends it, and the ones `sprout server` would refuse. */
static void check_hello(const uint8_t client_key[SPROUT_KEY_BYTES],
                        const uint8_t server_public[SPROUT_KEY_BYTES]) {
    SproutHello h = {.session = 42, .direction = SPROUT_DIRECTION_UP, .mode = SPROUT_MODE_PACED,
                     .scheme = SPROUT_SCHEME_SPROUT_WIDE, .confidence = 0.95, .rate_kbps = 1000,
                     .duration_ms = 20000, .payload_bytes = 1000};
    uint8_t buf[SPROUT_HELLO_BYTES];
    size_t len = 0;
    CHECK(sprout_hello_encode(&h, buf, sizeof buf, &len) == SPROUT_STATUS_OK &&
              len == SPROUT_HELLO_BYTES && buf[0] == 1 && buf[4] == SPROUT_SCHEME_SPROUT_WIDE,
          "hello of %zu bytes", len);
    SproutConn *conn = NULL;
    CHECK(sprout_conn_new_client(client_key, server_public, buf, len, 0, &conn) ==
              SPROUT_STATUS_OK,
          "a client greeting with a HELLO");
    CHECK(sprout_conn_send_bye(conn) == SPROUT_STATUS_OK, "a BYE before the session is up");
    sprout_conn_free(conn);
    CHECK(sprout_conn_send_bye(NULL) == SPROUT_STATUS_NULL_POINTER, "NULL conn");
    CHECK(sprout_hello_encode(&h, buf, SPROUT_HELLO_BYTES - 1, &len) ==
                  SPROUT_STATUS_BUFFER_TOO_SMALL &&
              len == SPROUT_HELLO_BYTES,
          "hello buffer too small");
    CHECK(sprout_hello_encode(NULL, buf, sizeof buf, &len) == SPROUT_STATUS_NULL_POINTER,
          "NULL hello");
    SproutHello bad = h;
    bad.scheme = 3;
    CHECK(sprout_hello_encode(&bad, buf, sizeof buf, &len) == SPROUT_STATUS_INVALID_ARGUMENT,
          "unknown scheme");
    bad = h;
    bad.confidence = 1.0;
    CHECK(sprout_hello_encode(&bad, buf, sizeof buf, &len) == SPROUT_STATUS_INVALID_ARGUMENT,
          "confidence 1");
    bad = h;
    bad.rate_kbps = 0;
    CHECK(sprout_hello_encode(&bad, buf, sizeof buf, &len) == SPROUT_STATUS_INVALID_ARGUMENT,
          "paced at 0 kbit/s");
    char why[128];
    CHECK(sprout_last_error(why, sizeof why) > 0 && strstr(why, "paced rate"), "%s", why);
}

int main(void) {
    uint8_t client_key[SPROUT_KEY_BYTES], client_public[SPROUT_KEY_BYTES];
    uint8_t server_key[SPROUT_KEY_BYTES], server_public[SPROUT_KEY_BYTES], again[32];
    CHECK(sprout_keygen(client_key, client_public) == SPROUT_STATUS_OK, "keygen");
    CHECK(sprout_keygen(server_key, server_public) == SPROUT_STATUS_OK, "keygen");
    CHECK(sprout_public_key(client_key, again) == SPROUT_STATUS_OK &&
              memcmp(again, client_public, 32) == 0,
          "public key");
    CHECK(strlen(sprout_version()) > 0, "version");

    static struct pipe up, down; /* client -> server, server -> client */
    struct side client = {"client", NULL, &down, &up, 0, 0, 0, 0, 0};
    struct side server = {"server", NULL, &up, &down, 0, 0, 0, 0, 0};
    const char *hello = "hello from C";
    CHECK(sprout_conn_new_client(client_key, server_public, (const uint8_t *)hello,
                                 strlen(hello), 0, &client.conn) == SPROUT_STATUS_OK,
          "client");
    CHECK(sprout_conn_new_server(server_key, client_public, 0, &server.conn) ==
              SPROUT_STATUS_OK,
          "server");
    check_errors(client.conn);
    check_hello(client_key, server_public);

    /* Forged datagrams are dropped and counted. */
    uint8_t junk[200];
    for (size_t j = 0; j < sizeof junk; j++) junk[j] = (uint8_t)(j * 13);
    CHECK(sprout_conn_recv(server.conn, 0, junk, sizeof junk) == SPROUT_STATUS_OK, "junk");

    uint64_t now = 0;
    for (; now < 20000000; now += 1000) {
        step(&client, now, 1);
        step(&server, now, 0);
        if (client.received == MESSAGES && server.received == MESSAGES) break;
    }
    CHECK(client.received == MESSAGES && server.received == MESSAGES,
          "client read %llu, server read %llu", (unsigned long long)client.received,
          (unsigned long long)server.received);

    SproutStats st;
    CHECK(sprout_conn_stats(client.conn, now, &st) == SPROUT_STATUS_OK, "stats");
    CHECK(st.state == SPROUT_STATE_ESTABLISHED && st.messages_sent == MESSAGES &&
              st.messages_received == MESSAGES && st.window_bytes > 0 &&
              st.datagrams_sent > 0 && st.datagrams_received > 0,
          "client stats: state %d, window %llu", (int)st.state,
          (unsigned long long)st.window_bytes);
    CHECK(sprout_conn_stats(server.conn, now, &st) == SPROUT_STATUS_OK &&
              st.datagrams_dropped >= 1,
          "server dropped %llu", (unsigned long long)st.datagrams_dropped);
    uint32_t forecast[16];
    size_t ticks = 0;
    CHECK(sprout_conn_forecast(client.conn, forecast, 16, &ticks) == SPROUT_STATUS_OK &&
              ticks > 0 && forecast[ticks - 1] >= forecast[0],
          "forecast of %zu ticks", ticks);
    CHECK(sprout_conn_forecast(client.conn, forecast, 0, &ticks) ==
              SPROUT_STATUS_BUFFER_TOO_SMALL,
          "forecast buffer too small");

    uint8_t peer[SPROUT_KEY_BYTES], greeting[64];
    size_t glen = 0;
    CHECK(sprout_conn_peer(server.conn, peer, greeting, sizeof greeting, &glen) ==
                  SPROUT_STATUS_OK &&
              glen == strlen(hello) && memcmp(greeting, hello, glen) == 0 &&
              memcmp(peer, client_public, 32) == 0,
          "peer and greeting");
    CHECK(sprout_conn_peer(client.conn, peer, greeting, sizeof greeting, &glen) ==
              SPROUT_STATUS_DONE,
          "a client has no peer greeting");

    /* The client closes; the server hears it. */
    CHECK(sprout_conn_close(client.conn, now) == SPROUT_STATUS_OK, "close");
    CHECK(sprout_conn_send(client.conn, now, junk, 1) == SPROUT_STATUS_CLOSED, "closed");
    for (uint64_t end = now + 100000; now < end && !server.closed; now += 1000) {
        step(&client, now, 1);
        step(&server, now, 0);
    }
    char why[128];
    CHECK(client.closed && server.closed, "client closed %d, server closed %d", client.closed,
          server.closed);
    CHECK(sprout_conn_end_reason(server.conn, why, sizeof why) > 0 &&
              strstr(why, "client closed"),
          "server's end: %s", why);
    uint64_t deadline;
    CHECK(sprout_conn_deadline(client.conn, &deadline) == SPROUT_STATUS_OK &&
              deadline == SPROUT_NO_DEADLINE,
          "nothing scheduled after the close");
    sprout_conn_free(client.conn);
    sprout_conn_free(server.conn);
    printf("sansio_test: %d passed, 0 failed\n", passed);
    return 0;
}
