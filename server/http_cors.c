/* CORS ([server] cors_allow_origin): a browser app on another origin may
 * call the API. Every answer, errors included, carries
 * Access-Control-Allow-Origin when the request's Origin is allowed; a
 * preflight (OPTIONS on a path of the API) is answered 204 before the API
 * key is checked, since browsers send no credentials with it (Fetch
 * standard, "CORS-preflight fetch"). */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The allowed origin to send back for `origin`: "*" when any is allowed,
 * `origin` itself when listed, NULL otherwise. Origins compare without
 * case and surrounding spaces. */
static const char *allowed_origin(const char *list, const char *origin)
{
    if (list == NULL || list[0] == '\0' || origin == NULL)
        return NULL;
    size_t olen = strlen(origin);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n == 1 && p[0] == '*')
            return "*";
        if (n > 0 && n == olen && strncasecmp(p, origin, n) == 0)
            return origin;
        p += n;
    }
    return NULL;
}

bool http_cors_preflight(const struct http_request *hr)
{
    const char *list = hr->http->settings.cors_allow_origin;
    return list != NULL && list[0] != '\0' && strcmp(hr->method, "OPTIONS") == 0 &&
           hr->ep != EP_NOT_FOUND;
}

void http_cors_headers(const struct http_request *hr, const struct http_head *head,
                       struct http_answer *a)
{
    const char *origin = allowed_origin(hr->http->settings.cors_allow_origin, hr->origin);
    if (origin == NULL)
        return;
    http_answer_header(a, "Access-Control-Allow-Origin", origin);
    if (strcmp(origin, "*") != 0)
        http_answer_header(a, "Vary", "Origin");
    http_answer_header(a, "Access-Control-Expose-Headers",
                            "x-queue-time, x-inference-time, x-total-time, x-truncated-inputs, "
                            "Retry-After");
    if (!http_cors_preflight(hr))
        return;
    static const char *const methods[] = {"OPTIONS", "GET, HEAD, OPTIONS", "POST, OPTIONS",
                                          "GET, HEAD, POST, OPTIONS"};
    const char *allow = http_allow_header(hr);
    size_t k = strcmp(allow, "POST") == 0 ? 2 : strcmp(allow, "GET, HEAD") == 0 ? 1 : 3;
    http_answer_header(a, "Access-Control-Allow-Methods", methods[k]);
    const struct http_span *asked =
        head ? http_head_find(head, "Access-Control-Request-Headers") : NULL;
    char *echo = asked ? strndup(asked->p, asked->len) : NULL;
    http_answer_header(a, "Access-Control-Allow-Headers",
                       echo ? echo : "Content-Type, Authorization");
    free(echo);
    http_answer_header(a, "Access-Control-Max-Age", "600");
}
