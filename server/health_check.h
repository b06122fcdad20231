/* `bertserve --health-check`: the container's HEALTHCHECK. It reads the same
 * config as the server (file, environment, flags), so it follows the port
 * wherever it was set. */
#ifndef SRV_HEALTH_CHECK_H
#define SRV_HEALTH_CHECK_H

#include "server_config.h"

/* GET /health from the server `cfg` describes: its port, on its host, or
 * on loopback when it listens on every address ("0.0.0.0", "::"). Sends the
 * API key when one is set (the probe needs none, but a proxy might). Waits
 * at most `timeout_ms`. Returns 0 when the answer is 200, 1 otherwise,
 * saying why on stderr. */
int health_check(const struct server_config *cfg, unsigned timeout_ms);

#endif
