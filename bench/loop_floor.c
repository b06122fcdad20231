/* The floor under an event loop's CPU per HTTP request on this machine: one
 * libuv loop that reads each request, finds its end (the blank line and
 * Content-Length bytes of body) and writes a fixed answer of --answer-bytes,
 * on kept-alive connections. No parsing beyond that, no other thread, no
 * allocation per request: what is left is the system calls and the TCP
 * work every HTTP server pays, as sgemm_peak --fma is the ceiling no GEMM
 * passes. bench/http_bench.py --floor runs it under the same wrk load as the
 * server and reads its CPU time from /proc.
 *
 *   loop_floor --port N [--answer-bytes B]
 *
 * Loopback benchmarks only: it listens on 127.0.0.1 and runs until killed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <uv.h>

#define CONN_BUFFER (64 * 1024)

struct conn {
    uv_tcp_t tcp;
    size_t len;            /* bytes of buf not yet answered */
    char buf[CONN_BUFFER];
};

static char *answer;
static size_t answer_len;

/* Bytes of the first complete request in buf[0, len), or 0 while it is not
 * all in. A request larger than the buffer is not expected from wrk. */
static size_t request_length(const char *buf, size_t len)
{
    const char *end = NULL;
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
            end = buf + i + 1;
            break;
        }
    if (end == NULL)
        return 0;
    size_t body = 0;
    /* end follows a '\n', so every line before it has one. */
    for (const char *p = buf, *nl; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (nl - p > 15 && strncasecmp(p, "content-length:", 15) == 0) {
            body = strtoul(p + 15, NULL, 10);
            break;
        }
    }
    size_t head = (size_t)(end - buf);
    return len - head >= body ? head + body : 0;
}

static void on_close(uv_handle_t *h)
{
    free(h->data);
}

static void on_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

/* The answer, written at once where the socket takes it (every time, with
 * answers this small), else queued. */
static void respond(struct conn *c)
{
    uv_buf_t b = uv_buf_init(answer, (unsigned)answer_len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)answer_len)
        return;
    if (n < 0 && n != UV_EAGAIN) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    uv_write_t *w = malloc(sizeof *w);
    b = uv_buf_init(answer + done, (unsigned)(answer_len - done));
    if (w == NULL || uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
        free(w);
        uv_close((uv_handle_t *)&c->tcp, on_close);
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)suggested;
    struct conn *c = h->data;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(CONN_BUFFER - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    struct conn *c = s->data;
    if (n < 0) {
        uv_close((uv_handle_t *)s, on_close);
        return;
    }
    c->len += (size_t)n;
    size_t used = 0, one;
    while ((one = request_length(c->buf + used, c->len - used)) > 0) {
        respond(c);
        used += one;
    }
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
    if (c->len == CONN_BUFFER) /* a request larger than the buffer: not wrk's */
        uv_close((uv_handle_t *)s, on_close);
}

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    struct conn *c = malloc(sizeof *c);
    if (c == NULL)
        return;
    c->len = 0;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        uv_close((uv_handle_t *)&c->tcp, on_close);
    else
        uv_tcp_nodelay(&c->tcp, 1);
}

int main(int argc, char **argv)
{
    int port = 0;
    size_t body = 512;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--answer-bytes") == 0)
            body = strtoul(argv[i + 1], NULL, 10);
    }
    if (port <= 0 || port > 65535 || body > (1u << 20)) {
        fprintf(stderr, "usage: loop_floor --port N [--answer-bytes B (at most 1 MiB)]\n");
        return 2;
    }
    answer = malloc(body + 128);
    if (answer == NULL)
        return 1;
    int head = snprintf(answer, 128,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\n\r\n",
                        body);
    memset(answer + head, 'x', body);
    answer_len = (size_t)head + body;

    uv_loop_t *loop = uv_default_loop();
    uv_tcp_t server;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_init(loop, &server);
    int rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&server, 1024, on_connection);
    if (rc != 0) {
        fprintf(stderr, "loop_floor: cannot listen on 127.0.0.1:%d: %s\n", port, uv_strerror(rc));
        return 1;
    }
    fprintf(stderr, "loop_floor: listening on 127.0.0.1:%d, %zu-byte answers\n", port, body);
    return uv_run(loop, UV_RUN_DEFAULT);
}
