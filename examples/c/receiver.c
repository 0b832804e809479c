/*
 * A Sprout receiver: the server side of one session on a UDP port. Prints its public key,
 * then once a second the application data delivered (kbit/s) and the 95th percentile of the
 * messages' application-level delay (from the sender's sprout_conn_send to this program's
 * sprout_conn_read, on CLOCK_REALTIME), the seconds counted from the first message; exits
 * when the sender closes (or after SECONDS without it). Plain POSIX: a UDP socket and poll(), the sans-IO connection in between.
 *
 * Rates count each message as it travels, its SPROUT_DATA_HEADER_BYTES included, as `sprout
 * server` and `sprout client` count them. The sender may be examples/c/sender.c or `sprout
 * client --direction up --server-key BASE64 ...`: a client that greets with a HELLO gets the
 * Sprout configuration it asks for and an ACCEPT, as from `sprout server`.
 *
 *   cc -I crates/libsprout/include examples/c/receiver.c -L target/release -lsprout -o receiver
 *   ./receiver [--bind ADDRESS] PORT [SECONDS]   (port 0: any free port, printed;
 *                                                 ADDRESS: IPv4, default 127.0.0.1)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include "common.h"

#define MAX_DELAYS 100000

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The 95th percentile of `n` delays (sorts them), microseconds. */
static uint64_t p95(uint64_t *delays, size_t n) {
    if (n == 0) return 0;
    qsort(delays, n, sizeof *delays, by_value);
    return delays[(n * 95 + 99) / 100 - 1];
}

int main(int argc, char **argv) {
    const char *bind_to = "127.0.0.1";
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--bind") == 0) {
        bind_to = argv[a + 1];
        a += 2;
    }
    if (argc - a < 1) {
        fprintf(stderr, "usage: %s [--bind ADDRESS] PORT [SECONDS]\n", argv[0]);
        return 2;
    }
    double seconds = argc - a > 1 ? atof(argv[a + 1]) : 3600;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[a]))};
    if (inet_pton(AF_INET, bind_to, &addr.sin_addr) != 1) {
        fprintf(stderr, "--bind: %s is not an IPv4 address\n", bind_to);
        return 2;
    }
    socklen_t addr_len = sizeof addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &addr_len) != 0) {
        perror("bind");
        return 1;
    }

    uint8_t key[SPROUT_KEY_BYTES], public_key[SPROUT_KEY_BYTES];
    char hex[2 * SPROUT_KEY_BYTES + 1], base64[45], shown[INET_ADDRSTRLEN];
    if (sprout_keygen(key, public_key) != SPROUT_STATUS_OK) die("sprout_keygen");
    key_to_hex(public_key, hex);
    key_to_base64(public_key, base64);
    inet_ntop(AF_INET, &addr.sin_addr, shown, sizeof shown);
    SproutConn *conn;
    /* NULL: any client key is let in (pass the client's public key to allow only it). */
    if (sprout_conn_new_server(key, NULL, monotonic_us(), &conn) != SPROUT_STATUS_OK)
        die("sprout_conn_new_server");
    printf("receiver on %s port %u key %s base64 %s\n", shown, ntohs(addr.sin_port), hex, base64);
    fflush(stdout);

    static uint64_t second[MAX_DELAYS], all[MAX_DELAYS];
    size_t n_second = 0, n_all = 0;
    uint64_t bytes_second = 0, messages = 0, start = 0, next_report = 0, next_seq = 0, lost = 0;
    uint64_t give_up = monotonic_us() + (uint64_t)(seconds * 1e6);
    struct sockaddr_storage peer;
    socklen_t peer_len = 0;
    /* Any message fits (a client's HELLO may choose a configuration of larger messages). */
    uint8_t *buf = malloc(SPROUT_MAX_DATAGRAM_BYTES);
    int done = 0;
    while (!done && monotonic_us() < give_up) {
        uint64_t deadline;
        if (sprout_conn_deadline(conn, &deadline) != SPROUT_STATUS_OK) die("sprout_conn_deadline");
        if (start && next_report < deadline) deadline = next_report;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, poll_ms_until(deadline));
        read_datagrams(fd, conn, &peer, &peer_len);

        SproutEvent ev;
        while (sprout_conn_poll_event(conn, &ev) == SPROUT_STATUS_OK) {
            if (ev == SPROUT_EVENT_CLOSED) done = 1;
        }
        SproutMessage m;
        while (sprout_conn_read(conn, &m, buf, SPROUT_MAX_DATAGRAM_BYTES) == SPROUT_STATUS_OK) {
            if (m.kind != SPROUT_MESSAGE_KIND_DATA) continue;
            /* The seconds count from the first message's arrival, as `sprout client`'s count
             * from the start of the server's stream (its ACCEPT). */
            if (!start) {
                start = monotonic_us();
                next_report = start + 1000000;
            }
            uint64_t now = realtime_us();
            uint64_t delay = now > m.sent_us ? now - m.sent_us : 0;
            if (n_second < MAX_DELAYS) second[n_second++] = delay;
            if (n_all < MAX_DELAYS) all[n_all++] = delay;
            if (m.seq > next_seq) lost += m.seq - next_seq;
            if (m.seq >= next_seq) next_seq = m.seq + 1;
            bytes_second += m.len + SPROUT_DATA_HEADER_BYTES;
            messages++;
        }
        uint64_t now = monotonic_us();
        if (start && (now >= next_report || done)) {
            uint64_t pct = p95(second, n_second);
            printf("receiver %2llu s: %6.0f kbit/s delivered, delay p95 %6.1f ms (%zu messages)\n",
                   (unsigned long long)((now - start + 500000) / 1000000), bytes_second * 8 / 1000.0,
                   pct / 1000.0, n_second);
            fflush(stdout);
            n_second = 0;
            bytes_second = 0;
            next_report += 1000000;
        }
        timers_and_send(fd, conn, peer_len ? (struct sockaddr *)&peer : NULL, peer_len);
    }
    char why[256];
    sprout_conn_end_reason(conn, why, sizeof why);
    printf("receiver: %llu messages, %llu lost, delay p95 %.1f ms; %s\n",
           (unsigned long long)messages, (unsigned long long)lost, p95(all, n_all) / 1000.0,
           done ? why : "gave up waiting");
    free(buf);
    sprout_conn_free(conn);
    close(fd);
    return done ? 0 : 1;
}
