/* A connection's bytes, on its loop: accept, read, frame each request
 * (http_parse.h), hand its head and body to http.c, write its answer,
 * close. One request at a time per connection: pipelined requests wait in
 * the read buffer, and reading pauses once IN_HOLD_MAX bytes wait there.
 *
 * The socket stays in the loop's epoll set for the connection's life and
 * is read while its request is with the prepare threads and the workers:
 * a short request costs one read, one write and a share of an epoll_wait,
 * and a client that leaves is seen at once (its request is orphaned, so the
 * workers drop it). libmicrohttpd, which this replaced, took a waiting
 * connection out of its epoll set and put it back (two epoll_ctl), and read
 * until EAGAIN, per request: twice the loop's CPU per short request
 * (BENCHMARKS.md, "Our own HTTP/1.1 front end").
 *
 * Re-entry: an answer is written at once when the socket takes it, but
 * what follows (the request's release, the next pipelined request, the
 * close) runs from the loop's check handle or the write's callback, never
 * inside the code that answered, which may still use the request. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "log.h"

/* The read buffer grows by doubling when less than this is free. */
#define IN_MIN_FREE 4096
/* Bytes of pipelined requests held while one is being answered. */
#define IN_HOLD_MAX 65536

static const char CONTINUE_100[] = "HTTP/1.1 100 Continue\r\n\r\n";

static uv_stream_t *stream_of(struct http_conn *c)
{
    return (uv_stream_t *)&c->tcp;
}

static void consume(struct http_conn *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

void http_answer_free(struct http_answer *a)
{
    if (a == NULL)
        return;
    if (a->budgeted)
        http_answer_give_back(a);
    else
        free(a->body);
    if (a->head != a->room)
        free(a->head);
    free(a);
}

/* ---- closing ------------------------------------------------------------------ */

static void on_closed(uv_handle_t *handle)
{
    struct http_conn *c = handle->data;
    struct http *h = c->http;
    if (c->written_queued) { /* closed in the iteration its answer went out */
        struct http_conn **p = &h->written;
        while (*p != c)
            p = &(*p)->written_next;
        *p = c->written_next;
    }
    if (c->hr != NULL)
        http_request_conn_done(c->hr);
    http_answer_free(c->out);
    free(c->in);
    free(c);
    h->n_conns--;
    if (h->accept_waiting && h->listening) {
        h->accept_waiting = false;
        http_conn_accept(h);
    }
}

void http_conn_close(struct http_conn *c)
{
    if (c->closed)
        return;
    c->closed = true;
    http_conns_closing(c->http, c);
    if (c->hr != NULL) {
        /* The workers peek at this socket: let it go before it closes. */
        srv_request_let_go(&c->hr->srv);
        if (c->hr->state == HTTP_REQUEST_OFF_LOOP)
            atomic_store(&c->hr->srv.orphaned, true);
    }
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct http_conn *c = req->data;
    if (status < 0)
        http_conn_close(c);
}

/* Answered with Connection: close. Closing at once with unread bytes in the
 * socket would reset the connection, and the client could lose the answer
 * (a 413 before a large body): shut our side, read what it still sends,
 * and close at its end or after the linger (http_conns.c). */
static void begin_closing(struct http_conn *c)
{
    c->phase = HTTP_CONN_CLOSING;
    c->t_start = srv_now_ns();
    c->in_len = 0;
    c->shutdown.data = c;
    if (c->eof || uv_shutdown(&c->shutdown, stream_of(c), on_shutdown) != 0)
        http_conn_close(c);
}

/* ---- reading ------------------------------------------------------------------ */

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);

static void set_reading(struct http_conn *c)
{
    bool want = !c->closed && !c->eof &&
                (c->phase == HTTP_CONN_HEAD || c->phase == HTTP_CONN_BODY ||
                 c->phase == HTTP_CONN_CLOSING || c->in_len < IN_HOLD_MAX);
    if (want && !c->reading)
        c->reading = uv_read_start(stream_of(c), on_alloc, on_read) == 0;
    else if (!want && c->reading) {
        uv_read_stop(stream_of(c));
        c->reading = false;
    }
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct http_conn *c = handle->data;
    (void)suggested;
    if (c->in_cap - c->in_len < IN_MIN_FREE) {
        size_t cap = c->in_cap ? c->in_cap * 2 : 2 * IN_MIN_FREE;
        char *in = realloc(c->in, cap);
        if (in == NULL) {
            *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS: closed */
            return;
        }
        c->in = in;
        c->in_cap = cap;
    }
    *buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

/* The request's body, its Connection header and HTTP version: how it is
 * framed and whether the connection stays open after it. */
static void frame_request(struct http_conn *c, struct http_request *hr)
{
    const struct http_head *head = &c->head;
    c->chunked = http_head_find(head, "Transfer-Encoding") != NULL;
    const struct http_span *cl = http_head_find(head, "Content-Length");
    c->body_left = 0;
    if (!c->chunked && cl != NULL)
        c->body_left = strtoull(cl->p, NULL, 10); /* http_framing checked its digits */
    if (c->chunked)
        http_chunked_begin(&c->chunk);
    hr->body_unread = c->chunked || c->body_left > 0;
    hr->head_only = head->method.len == 4 && memcmp(head->method.p, "HEAD", 4) == 0;

    bool close = false, keep_alive = false;
    for (size_t i = 0; i < head->n_headers; i++) {
        if (head->names[i].len != 10 || strncasecmp(head->names[i].p, "Connection", 10) != 0)
            continue;
        size_t pos = 0;
        struct http_span option;
        while (http_list_next(head->values[i], &pos, &option)) {
            close |= option.len == 5 && strncasecmp(option.p, "close", 5) == 0;
            keep_alive |= option.len == 10 && strncasecmp(option.p, "keep-alive", 10) == 0;
        }
    }
    if (head->minor == 0 && keep_alive && !close)
        hr->keep_alive_10 = true;
    else if (close || head->minor == 0)
        hr->close_after = true;
}

/* RFC 9110 10.1.1: a client that asked waits for 100 before sending the
 * body; a request refused at its head gets its final answer instead. */
static void send_continue(struct http_conn *c)
{
    const struct http_span *expect = http_head_find(&c->head, "Expect");
    if (expect == NULL || c->head.minor == 0 || expect->len != 12 ||
        strncasecmp(expect->p, "100-continue", 12) != 0)
        return;
    uv_buf_t b = uv_buf_init((char *)CONTINUE_100, sizeof CONTINUE_100 - 1);
    int sent = uv_try_write(stream_of(c), &b, 1);
    /* A fresh socket's send buffer takes 25 bytes; if it did not, the
     * client sends its body after its own wait (curl: 1 s). Half of them
     * would corrupt the stream. */
    if (sent > 0 && (size_t)sent != b.len)
        http_conn_close(c);
}

/* Returns whether to go on: the connection moved to its body. */
static bool read_head(struct http_conn *c)
{
    struct http *h = c->http;
    size_t blank = 0; /* RFC 9112 2.2: empty lines before a request line are ignored */
    while (blank + 1 < c->in_len && c->in[blank] == '\r' && c->in[blank + 1] == '\n')
        blank += 2;
    if (blank > 0) {
        consume(c, blank);
        c->head_scanned = 0;
    }
    if (c->in_len == 0)
        return false;
    if (c->idle)
        http_conns_busy(h, c);
    struct http_parse_error err;
    long end = http_head_end(c->in, c->in_len, &c->head_scanned, &err);
    if (end == 0)
        return false;
    struct http_request *hr = http_request_new(h, c);
    if (hr == NULL) {
        http_conn_close(c);
        return false;
    }
    c->hr = hr;
    c->head_scanned = 0;
    c->phase = HTTP_CONN_BODY;
    if (end < 0 || !http_head_parse(&c->head, c->in, (size_t)end, &err)) {
        c->in_len = 0; /* nothing after a malformed head can be framed */
        http_on_bad_head(hr, &err);
        return false;
    }
    frame_request(c, hr);
    http_on_head(hr, &c->head);
    consume(c, (size_t)end);
    if (c->phase != HTTP_CONN_BODY || c->closed)
        return false; /* answered at its head: its body is never read */
    if (hr->body_unread)
        send_continue(c);
    return !c->closed;
}

struct body_run {
    struct http_conn *conn;
    bool ok;
};

static void on_chunk_data(void *arg, const char *p, size_t n)
{
    struct body_run *run = arg;
    if (run->ok)
        run->ok = http_on_body(run->conn->hr, p, n);
}

/* Returns whether to go on: the request was answered or handed off. */
static bool read_body(struct http_conn *c)
{
    struct http_request *hr = c->hr;
    struct body_run run = {.conn = c, .ok = true};
    size_t used = 0;
    bool whole;
    if (c->chunked) {
        struct http_parse_error err;
        enum http_chunked_status st = http_chunked_feed(&c->chunk, c->in, c->in_len, &used,
                                                        on_chunk_data, &run, &err);
        if (st == HTTP_CHUNKED_ERROR) {
            c->in_len = 0;
            hr->close_after = true;
            http_on_bad_head(hr, &err);
            return false;
        }
        whole = st == HTTP_CHUNKED_DONE;
    } else {
        used = c->in_len < c->body_left ? c->in_len : (size_t)c->body_left;
        if (used > 0)
            run.ok = http_on_body(hr, c->in, used);
        c->body_left -= used;
        whole = c->body_left == 0;
    }
    consume(c, used);
    if (!run.ok) { /* far past max_body_bytes: not worth reading to answer */
        http_conn_close(c);
        return false;
    }
    if (!whole)
        return false;
    hr->body_unread = false;
    c->phase = HTTP_CONN_HANDLED;
    http_on_request(hr);
    if (c->phase == HTTP_CONN_HANDLED && hr->state != HTTP_REQUEST_OFF_LOOP)
        http_conn_close(c); /* no answer could be made (out of memory) */
    return false;
}

static void process(struct http_conn *c)
{
    if (c->processing || c->closed)
        return;
    c->processing = true;
    bool more = true;
    while (more && !c->closed) {
        if (c->phase == HTTP_CONN_HEAD)
            more = read_head(c);
        else if (c->phase == HTTP_CONN_BODY)
            more = read_body(c);
        else
            more = false;
    }
    c->processing = false;
    set_reading(c);
}

/* End of the stream, or an error. A client that leaves while its request
 * is off the loop orphans it: the connection closes when it comes back
 * (the workers peek at the socket until then). */
static void read_ended(struct http_conn *c, ssize_t status)
{
    c->eof = true;
    set_reading(c);
    if (status == UV_EOF && c->hr != NULL && c->hr->state == HTTP_REQUEST_OFF_LOOP) {
        atomic_store(&c->hr->srv.orphaned, true);
        return;
    }
    if (status == UV_EOF && c->phase == HTTP_CONN_WRITING)
        return; /* a half-close: the answer is written, then the connection closes */
    http_conn_close(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct http_conn *c = stream->data;
    (void)buf;
    if (nread < 0) {
        read_ended(c, nread);
        return;
    }
    c->in_len += (size_t)nread;
    if (c->phase == HTTP_CONN_CLOSING)
        c->in_len = 0;
    else if (nread > 0)
        process(c);
}

/* ---- writing ------------------------------------------------------------------ */

/* The answer is out: release the request, then read the next one or close. */
static void answer_done(struct http_conn *c)
{
    struct http_answer *a = c->out;
    c->out = NULL;
    bool close = a->close || c->eof;
    http_answer_free(a);
    if (close)
        begin_closing(c);
    else
        c->phase = HTTP_CONN_HEAD;
    struct http_request *hr = c->hr;
    c->hr = NULL;
    if (hr != NULL)
        http_request_conn_done(hr);
    if (!close)
        process(c);
}

static void on_written(uv_write_t *w, int status)
{
    struct http_conn *c = w->data;
    if (status < 0) { /* the client reset, or the connection is closing */
        http_conn_close(c);
        return;
    }
    answer_done(c);
}

static void on_check(uv_check_t *check)
{
    struct http *h = check->data;
    http_prepare_flush(h);
    while (h->written != NULL) {
        struct http_conn *c = h->written;
        h->written = c->written_next;
        c->written_queued = false;
        if (!c->closed)
            answer_done(c);
    }
    http_prepare_flush(h); /* what the next pipelined requests handed off */
    uv_check_stop(check);
}

void http_conn_defer(struct http *h)
{
    uv_check_start(&h->after_reads, on_check);
}

void http_conn_send(struct http_conn *c, struct http_answer *a)
{
    if (c->closed) {
        http_answer_free(a);
        return;
    }
    struct http *h = c->http;
    c->out = a;
    c->phase = HTTP_CONN_WRITING;
    uv_buf_t bufs[2] = {uv_buf_init(a->head, (unsigned)a->head_len),
                        uv_buf_init(a->body, (unsigned)a->body_len)};
    unsigned n = a->send_body && a->body_len > 0 ? 2 : 1;
    int sent = uv_try_write(stream_of(c), bufs, n);
    if (sent == UV_EAGAIN)
        sent = 0;
    if (sent < 0) {
        http_conn_close(c);
        return;
    }
    size_t left = (size_t)sent;
    unsigned first = 0;
    while (first < n && left >= bufs[first].len)
        left -= bufs[first++].len;
    if (first == n) { /* all of it: finish after the code that answered */
        c->written_next = h->written;
        h->written = c;
        c->written_queued = true;
        http_conn_defer(h);
        return;
    }
    bufs[first].base += left;
    bufs[first].len -= left;
    a->write.data = c;
    if (uv_write(&a->write, stream_of(c), bufs + first, n - first, on_written) != 0)
        http_conn_close(c);
}

/* ---- accepting ----------------------------------------------------------------- */

/* Each loop holds up to max_connections plus the reserve (the kernel may
 * send it every new connection); past that a connection waits in libuv,
 * which stops watching the listener until it is accepted. */
static size_t accept_limit(const struct http *h)
{
    size_t max = h->settings.max_connections;
    return max + HTTP_CONNECTION_RESERVE(max);
}

void http_conn_accept(struct http *h)
{
    if (h->n_conns >= accept_limit(h)) {
        h->accept_waiting = true;
        return;
    }
    struct http_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        h->accept_waiting = true; /* the deadline sweep tries again */
        return;
    }
    uv_tcp_init(h->loop, &c->tcp);
    c->tcp.data = c;
    c->http = h;
    h->n_conns++;
    if (uv_accept((uv_stream_t *)&h->listener, stream_of(c)) != 0) {
        c->closed = true;
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1); /* each answer is one write: nothing to coalesce */
    http_conns_opened(h, c);
    set_reading(c);
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct http *h = listener->data;
    if (status < 0) {
        log_msg(LOG_WARN, "accepting a connection failed: %s", uv_strerror(status));
        return;
    }
    http_conn_accept(h);
}

/* The socket is bound and listening already (http_open): what fails here
 * cannot for such a socket. */
void http_conn_listen(struct http *h)
{
    uv_tcp_init(h->loop, &h->listener);
    h->listener.data = h;
    int rc = uv_tcp_open(&h->listener, h->listen_fd);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&h->listener, HTTP_LISTEN_BACKLOG, on_connection);
    h->listen_fd = -1; /* the handle's now */
    h->listening = true;
    if (rc != 0)
        log_msg(LOG_ERROR, "cannot watch the listening socket: %s", uv_strerror(rc));
}

void http_conn_stop(struct http *h)
{
    if (h->listening) {
        uv_close((uv_handle_t *)&h->listener, NULL);
        h->listening = false;
        h->accept_waiting = false;
    }
    for (struct http_conn *c = h->conns; c != NULL;) {
        struct http_conn *next = c->next;
        http_conn_close(c);
        c = next;
    }
}
