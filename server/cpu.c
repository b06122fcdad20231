#include "cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Digits at *p into *out, advancing *p; false if none or on overflow. */
static bool cpu_read_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        s++;
    }
    if (s == *p)
        return false;
    *p = s;
    *out = v;
    return true;
}

/* Only blanks and newlines may follow a value in these files. */
static bool cpu_at_end(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n')
        p++;
    return *p == '\0';
}

/* ceil(quota / period) as a CPU count, at least 1. */
static unsigned cpu_quota_cpus(uint64_t quota, uint64_t period)
{
    uint64_t cpus = quota / period + (quota % period != 0);
    if (cpus > UINT_MAX)
        return UINT_MAX;
    return cpus > 0 ? (unsigned)cpus : 1;
}

bool cpu_parse_cgroup2_max(const char *text, unsigned *cpus)
{
    const char *p = text;
    uint64_t quota = 0, period;
    bool unlimited = strncmp(p, "max", 3) == 0;
    if (unlimited)
        p += 3;
    else if (!cpu_read_u64(&p, &quota) || quota == 0)
        return false;
    if (*p != ' ')
        return false;
    p++;
    if (!cpu_read_u64(&p, &period) || period == 0 || !cpu_at_end(p))
        return false;
    *cpus = unlimited ? 0 : cpu_quota_cpus(quota, period);
    return true;
}

bool cpu_parse_cgroup1_quota(const char *quota_text, const char *period_text, unsigned *cpus)
{
    const char *q = quota_text, *p = period_text;
    uint64_t quota, period;
    if (!cpu_read_u64(&p, &period) || period == 0 || !cpu_at_end(p))
        return false;
    if (strncmp(q, "-1", 2) == 0 && cpu_at_end(q + 2)) {
        *cpus = 0;
        return true;
    }
    if (!cpu_read_u64(&q, &quota) || quota == 0 || !cpu_at_end(q))
        return false;
    *cpus = cpu_quota_cpus(quota, period);
    return true;
}

/* Read a small file into buf (NUL-terminated); false if missing or too big. */
static bool cpu_read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == len - 1)
            break;
    }
    close(fd);
    buf[n] = '\0';
    return n > 0 && n < len - 1;
}

/* The limit set in one cgroup folder `dir`, 0 if none or unreadable. */
static unsigned cpu_dir_limit(const char *dir, bool v2)
{
    char path[PATH_MAX], text[128], period[128];
    unsigned cpus = 0;
    if (v2) {
        if (snprintf(path, sizeof path, "%s/cpu.max", dir) < (int)sizeof path &&
            cpu_read_file(path, text, sizeof text) && cpu_parse_cgroup2_max(text, &cpus))
            return cpus;
        return 0;
    }
    if (snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir) >= (int)sizeof path ||
        !cpu_read_file(path, text, sizeof text))
        return 0;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir) >= (int)sizeof path ||
        !cpu_read_file(path, period, sizeof period))
        return 0;
    return cpu_parse_cgroup1_quota(text, period, &cpus) ? cpus : 0;
}

static unsigned cpu_min_limit(unsigned a, unsigned b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    return a < b ? a : b;
}

/* The tightest limit on `cgroup` (len bytes, "/a/b") and its ancestors in the
 * hierarchy mounted at `mount`, down to `mount` itself. */
static unsigned cpu_walk(const char *mount, const char *cgroup, size_t len, bool v2)
{
    char dir[PATH_MAX];
    unsigned limit = 0;
    while (len > 0 && cgroup[len - 1] == '/')
        len--;
    for (;;) {
        if (snprintf(dir, sizeof dir, "%s%.*s", mount, (int)len, cgroup) < (int)sizeof dir)
            limit = cpu_min_limit(limit, cpu_dir_limit(dir, v2));
        if (len == 0)
            return limit;
        while (len > 0 && cgroup[len - 1] != '/')
            len--;
        while (len > 0 && cgroup[len - 1] == '/')
            len--;
    }
}

/* True if the comma-separated `list` (len bytes) names controller "cpu". */
static bool cpu_has_cpu_controller(const char *list, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && list[j] != ',')
            j++;
        if (j - i == 3 && strncmp(list + i, "cpu", 3) == 0)
            return true;
        i = j + 1;
    }
    return false;
}

unsigned cpu_cgroup_limit(const char *root, const char *proc_self_cgroup)
{
    /* Where the v1 cpu controller may be mounted; "cpu" is often a link to
     * the combined one, and reading the same files twice is harmless. */
    static const char *const v1_dirs[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
    char mount[PATH_MAX];
    unsigned limit = 0;
    /* The root itself always counts, even when /proc/self/cgroup names a
     * path that only exists outside our cgroup namespace. */
    limit = cpu_min_limit(limit, cpu_walk(root, "", 0, true));
    for (size_t d = 0; d < sizeof v1_dirs / sizeof v1_dirs[0]; d++)
        if (snprintf(mount, sizeof mount, "%s/%s", root, v1_dirs[d]) < (int)sizeof mount)
            limit = cpu_min_limit(limit, cpu_walk(mount, "", 0, false));

    /* Lines are "ID:CONTROLLERS:PATH"; v2 is "0::PATH". */
    for (const char *line = proc_self_cgroup; line != NULL && *line != '\0';) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c2 != NULL && c2 + 1 < end && c2[1] == '/') {
            const char *path = c2 + 1;
            size_t path_len = (size_t)(end - path);
            if (c2 == c1 + 1) {
                limit = cpu_min_limit(limit, cpu_walk(root, path, path_len, true));
            } else if (cpu_has_cpu_controller(c1 + 1, (size_t)(c2 - c1 - 1))) {
                for (size_t d = 0; d < sizeof v1_dirs / sizeof v1_dirs[0]; d++)
                    if (snprintf(mount, sizeof mount, "%s/%s", root, v1_dirs[d]) <
                        (int)sizeof mount)
                        limit = cpu_min_limit(limit, cpu_walk(mount, path, path_len, false));
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return limit;
}

unsigned cpu_affinity_count(void)
{
    /* The mask may be wider than cpu_set_t's 1024 CPUs: grow until the
     * kernel accepts the size. */
    for (int n = 1024; n <= (1 << 20); n *= 2) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (set == NULL)
            break;
        size_t size = CPU_ALLOC_SIZE(n);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            int count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            if (count > 0)
                return (unsigned)count;
            break;
        }
        CPU_FREE(set);
        if (errno != EINVAL)
            break;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (unsigned)online : 1;
}

unsigned cpu_available(void)
{
    char text[8192];
    unsigned cpus = cpu_affinity_count();
    unsigned limit = cpu_cgroup_limit("/sys/fs/cgroup",
                                      cpu_read_file("/proc/self/cgroup", text, sizeof text)
                                          ? text
                                          : NULL);
    return cpu_min_limit(cpus, limit);
}
