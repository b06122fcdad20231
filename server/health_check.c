#include "health_check.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A socket connected to host:port, with send and receive timeouts; -1
 * with the reason on stderr. */
static int connect_to(const char *host, int port, unsigned timeout_ms)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "bertserve --health-check: %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int fd = -1;
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        fprintf(stderr, "bertserve --health-check: cannot connect to %s:%d\n", host, port);
    return fd;
}

int health_check(const struct server_config *cfg, unsigned timeout_ms)
{
    /* A server on every address answers on loopback. */
    const char *host = cfg->server.host;
    if (strcmp(host, "0.0.0.0") == 0)
        host = "127.0.0.1";
    else if (strcmp(host, "::") == 0)
        host = "::1";
    int fd = connect_to(host, cfg->server.port, timeout_ms);
    if (fd < 0)
        return 1;
    char request[512];
    int n = snprintf(request, sizeof request,
                     "GET /health HTTP/1.1\r\nHost: %s\r\n%s%s%sConnection: close\r\n\r\n",
                     strchr(host, ':') ? "localhost" : host,
                     cfg->server.api_key[0] ? "Authorization: Bearer " : "",
                     cfg->server.api_key, cfg->server.api_key[0] ? "\r\n" : "");
    char answer[64] = "";
    ssize_t got = 0;
    if (n > 0 && (size_t)n < sizeof request && send(fd, request, (size_t)n, 0) == n)
        got = recv(fd, answer, sizeof answer - 1, 0);
    close(fd);
    answer[got > 0 ? got : 0] = '\0';
    /* "HTTP/1.1 200 OK": the status is the second word. */
    if (strncmp(answer, "HTTP/1.", 7) == 0 && strncmp(answer + 8, " 200 ", 5) == 0)
        return 0;
    char *eol = strpbrk(answer, "\r\n");
    if (eol)
        *eol = '\0';
    fprintf(stderr, "bertserve --health-check: %s:%d answered \"%s\"\n", host,
            cfg->server.port, got > 0 ? answer : "nothing");
    return 1;
}
