/* How many CPUs this process may use: the smaller of its scheduler affinity
 * (taskset, cpuset) and its cgroup CPU quota rounded up (docker --cpus,
 * Kubernetes limits.cpu). A container on a 64-core host limited to 2 CPUs
 * should run 2 workers, not 64.
 *
 * The parsers take text and a root folder so tests can feed them any
 * cgroup layout; cpu_available() reads this machine's. All functions are
 * reentrant. */
#ifndef SERVER_CPU_H
#define SERVER_CPU_H

#include <stdbool.h>

/* CPUs available to this process; never 0. Reads /proc and /sys. */
unsigned cpu_available(void);

/* CPUs in this process's scheduler affinity mask (sysconf's online count if
 * the mask cannot be read); never 0. */
unsigned cpu_affinity_count(void);

/* cgroup v2 `cpu.max`: "max 100000" (no limit) or "QUOTA PERIOD" in
 * microseconds. On success sets *cpus to ceil(QUOTA / PERIOD) (at least 1),
 * or 0 for no limit; false when the text is malformed. */
bool cpu_parse_cgroup2_max(const char *text, unsigned *cpus);

/* cgroup v1 `cpu.cfs_quota_us` ("-1" = no limit) and `cpu.cfs_period_us`;
 * as cpu_parse_cgroup2_max. */
bool cpu_parse_cgroup1_quota(const char *quota_text, const char *period_text, unsigned *cpus);

/* The tightest CPU limit of the cgroups named by `proc_self_cgroup` (the text
 * of /proc/self/cgroup) under the cgroup filesystem mounted at `root`
 * (normally "/sys/fs/cgroup"): v2 `cpu.max` files, and v1 quotas under
 * root/cpu, root/cpu,cpuacct or root/cpuacct,cpu. Every ancestor of the
 * process's cgroup counts, as does `root` itself (inside a container it is
 * the container's own cgroup). 0 when nothing limits the process. */
unsigned cpu_cgroup_limit(const char *root, const char *proc_self_cgroup);

#endif
