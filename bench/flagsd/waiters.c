/*
 * Long-poll waiters for the fan-out benchmark, in C: holds N parked `GET …/snapshot?wait=…` requests with one
 * epoll loop, so the load client costs a few microseconds per response instead of the ~25 µs of Python's asyncio
 * (both share the machine's cores with flagsd). bench/flagsd/fanout.py drives it with --waiters-binary.
 *
 *   waiters HOST PORT N REQUEST_FILE
 *
 * Opens N connections, sends REQUEST_FILE's bytes on each (reopening connections reset before a response, as a
 * full accept backlog does), prints "sent" once every request is written, and then, for each connection, the
 * CLOCK_MONOTONIC time (seconds, the clock of Python's time.monotonic) at which its complete response arrived,
 * with status, ETag version and response bytes: "done SECONDS STATUS VERSION BYTES", all once the last response
 * arrived, then "end". It and keeps the connections open until standard input closes, as clients about to poll again would.
 * On standard error, once every request is written: "connects N slow S seconds", the connects that took over 200 ms
 * (a handshake the server's full listen backlog dropped waits a second for its retransmission) and their time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    char head[2048];
    size_t head_length;
    long header_end;       /* offset of the blank line's end in head, -1 before it arrived */
    long content_length;
    long body_received;
    long total;
    int status;
    long version;
    double done_at;        /* 0 until the whole response arrived */
} Waiter;

static const char *request;
static size_t request_length;
static struct sockaddr_in address;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int slow_connects;
static double slow_connect_seconds;

static int open_connection(int epoll, Waiter *waiter, int index) {
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) die("socket");
        double started = now();
        int connected = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
        double took = now() - started;
        if (took > 0.2) {
            slow_connects++;
            slow_connect_seconds += took;
        }
        if (connected) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            size_t written = 0;
            while (written < request_length) {
                ssize_t n = write(fd, request + written, request_length - written);
                if (n <= 0) die("write");
                written += (size_t)n;
            }
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            memset(waiter, 0, sizeof *waiter);
            waiter->fd = fd;
            waiter->header_end = -1;
            waiter->version = -1;
            struct epoll_event event = {.events = EPOLLIN, .data.u32 = (unsigned)index};
            if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) < 0) die("epoll_ctl");
            return fd;
        }
        close(fd);
        usleep(20000);
    }
    die("connect");
    return -1;
}

/* Parses what arrived; returns 1 when the response is complete. */
static int consume(Waiter *waiter, const char *data, size_t length) {
    waiter->total += (long)length;
    if (waiter->header_end < 0) {
        size_t room = sizeof waiter->head - 1 - waiter->head_length;
        size_t take = length < room ? length : room;
        memcpy(waiter->head + waiter->head_length, data, take);
        waiter->head_length += take;
        waiter->head[waiter->head_length] = 0;
        char *end = strstr(waiter->head, "\r\n\r\n");
        if (!end) return 0;
        waiter->header_end = end - waiter->head + 4;
        waiter->status = atoi(waiter->head + 9);
        waiter->content_length = 0;
        for (char *line = strstr(waiter->head, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
            char *field = line + 2;
            if (strncasecmp(field, "content-length:", 15) == 0) waiter->content_length = atol(field + 15);
            if (strncasecmp(field, "etag:", 5) == 0) {
                char *dot = memchr(field, '.', (size_t)(end - field));
                if (dot) waiter->version = atol(dot + 1);
            }
        }
        waiter->body_received = (long)waiter->head_length - waiter->header_end + (long)(length - take);
    } else {
        waiter->body_received += (long)length;
    }
    return waiter->body_received >= waiter->content_length;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: waiters HOST PORT N REQUEST_FILE\n");
        return 2;
    }
    int count = atoi(argv[3]);
    FILE *file = fopen(argv[4], "rb");
    if (!file) die(argv[4]);
    static char request_bytes[8192];
    request_length = fread(request_bytes, 1, sizeof request_bytes, file);
    fclose(file);
    request = request_bytes;
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) die("address");

    int epoll = epoll_create1(0);
    if (epoll < 0) die("epoll_create1");
    Waiter *waiters = calloc((size_t)count, sizeof *waiters);
    for (int i = 0; i < count; i++) open_connection(epoll, &waiters[i], i);
    fprintf(stderr, "connects %d slow %d %.3f\n", count, slow_connects, slow_connect_seconds);
    printf("sent\n");
    fflush(stdout);

    struct epoll_event stdin_event = {.events = EPOLLIN, .data.u32 = (unsigned)count};
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    epoll_ctl(epoll, EPOLL_CTL_ADD, 0, &stdin_event);

    int remaining = count;
    static char buffer[1 << 16];
    struct epoll_event events[256];
    for (;;) {
        int ready = epoll_wait(epoll, events, 256, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        double at = now();
        for (int e = 0; e < ready; e++) {
            unsigned index = events[e].data.u32;
            if (index == (unsigned)count) {
                ssize_t n = read(0, buffer, sizeof buffer);
                if (n == 0) return 0;  /* standard input closed: the measurement is over */
                continue;
            }
            Waiter *waiter = &waiters[index];
            for (;;) {
                ssize_t n = read(waiter->fd, buffer, sizeof buffer);
                if (n > 0) {
                    if (waiter->done_at == 0 && consume(waiter, buffer, (size_t)n)) {
                        waiter->done_at = at;
                        if (--remaining == 0) {
                            /* Printed at the end, so writing them costs nothing while responses arrive. */
                            for (int i = 0; i < count; i++) {
                                printf("done %.6f %d %ld %ld\n", waiters[i].done_at, waiters[i].status,
                                       waiters[i].version, waiters[i].total);
                            }
                            printf("end\n");
                            fflush(stdout);
                        }
                    }
                    continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                /* Closed or reset. Before a response: open it again (the server reset it while accepting). */
                epoll_ctl(epoll, EPOLL_CTL_DEL, waiter->fd, NULL);
                close(waiter->fd);
                if (waiter->done_at == 0) {
                    open_connection(epoll, waiter, (int)index);
                } else {
                    waiter->fd = -1;
                }
                break;
            }
        }
    }
}
