/* CPU detection: the cgroup parsers on given text, the cgroup walk on
 * made-up v1 and v2 trees in a temporary folder (never this machine's
 * cgroups), and the affinity count against a mask this test sets itself. */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cpu.h"

static char root[64];

static void test_cgroup2_text(void)
{
    struct {
        const char *text;
        bool ok;
        unsigned cpus;
    } cases[] = {
        {"max 100000\n", true, 0},
        {"max 100000", true, 0},
        {"200000 100000\n", true, 2},
        {"150000 100000\n", true, 2},  /* 1.5 CPUs: round up */
        {"100000 100000\n", true, 1},
        {"50000 100000\n", true, 1},   /* half a CPU still needs one worker */
        {"1000 1000000\n", true, 1},
        {"6400000 100000 \n", true, 64},
        {"18446744073709551615 1\n", true, UINT_MAX},
        {"", false, 0},
        {"max", false, 0},
        {"max\n", false, 0},
        {"max 0\n", false, 0},
        {"0 100000\n", false, 0},
        {"-1 100000\n", false, 0},
        {"200000\n", false, 0},
        {"200000  100000\n", false, 0},
        {"200000 100000 7\n", false, 0},
        {"abc 100000\n", false, 0},
        {"18446744073709551616 100000\n", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned cpus = 12345;
        bool ok = cpu_parse_cgroup2_max(cases[i].text, &cpus);
        CHECK_INT_EQ(ok, cases[i].ok);
        if (ok != cases[i].ok)
            fprintf(stderr, "  cpu.max \"%s\"\n", cases[i].text);
        if (ok)
            CHECK_INT_EQ(cpus, cases[i].cpus);
    }
}

static void test_cgroup1_text(void)
{
    struct {
        const char *quota, *period;
        bool ok;
        unsigned cpus;
    } cases[] = {
        {"-1\n", "100000\n", true, 0},
        {"200000\n", "100000\n", true, 2},
        {"250000", "100000", true, 3},
        {"50000\n", "100000\n", true, 1},
        {"", "100000", false, 0},
        {"-2\n", "100000\n", false, 0},
        {"-1x\n", "100000\n", false, 0},
        {"0\n", "100000\n", false, 0},
        {"100\n", "0\n", false, 0},
        {"100\n", "abc\n", false, 0},
        {"100\n", "", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned cpus = 12345;
        bool ok = cpu_parse_cgroup1_quota(cases[i].quota, cases[i].period, &cpus);
        CHECK_INT_EQ(ok, cases[i].ok);
        if (ok)
            CHECK_INT_EQ(cpus, cases[i].cpus);
    }
}

/* Write `text` to root/relative, creating folders on the way. */
static void put(const char *relative, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void wipe(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", root);
    CHECK_INT_EQ(system(cmd), 0);
}

static void test_cgroup_trees(void)
{
    /* Nothing mounted: no limit. */
    CHECK_INT_EQ(cpu_cgroup_limit(root, NULL), 0);
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/\n"), 0);

    /* v2 host view: the tightest of the process's cgroup and its ancestors. */
    put("kubepods/cpu.max", "400000 100000\n");
    put("kubepods/pod1/cpu.max", "max 100000\n");
    put("kubepods/pod1/ctr/cpu.max", "150000 100000\n");
    put("other/cpu.max", "100000 100000\n"); /* a sibling does not count */
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/kubepods/pod1/ctr\n"), 2);
    put("kubepods/pod1/ctr/cpu.max", "max 100000\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/kubepods/pod1/ctr\n"), 4);
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/kubepods/pod1/ctr/\n"), 4);
    put("kubepods/pod1/ctr/cpu.max", "not a number\n"); /* ignored */
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/kubepods/pod1/ctr"), 4);
    wipe();

    /* v2 in a container's namespace: the root is the container's cgroup. */
    put("cpu.max", "300000 100000\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/\n"), 3);
    /* ... and when /proc/self/cgroup names a host path that is not mounted. */
    CHECK_INT_EQ(cpu_cgroup_limit(root, "0::/system.slice/docker-abc.scope\n"), 3);
    CHECK_INT_EQ(cpu_cgroup_limit(root, NULL), 3);
    wipe();

    /* v1: only hierarchies carrying the cpu controller count. */
    put("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
    put("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    put("memory/docker/abc/cpu.cfs_quota_us", "100000\n"); /* decoy */
    put("memory/docker/abc/cpu.cfs_period_us", "100000\n");
    const char *v1 = "12:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n";
    CHECK_INT_EQ(cpu_cgroup_limit(root, v1), 3);
    CHECK_INT_EQ(cpu_cgroup_limit(root, "3:memory:/docker/abc\n"), 0);
    /* a quota without its period is no limit */
    put("cpu/cpu.cfs_quota_us", "100000\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "1:cpu:/\n"), 0);
    put("cpu/cpu.cfs_period_us", "100000\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "1:cpu:/\n"), 1);
    put("cpu/cpu.cfs_quota_us", "-1\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "1:cpu:/\n"), 0);
    /* "cpuacct" alone is not "cpu" */
    put("cpuacct,cpu/x/cpu.cfs_quota_us", "100000\n");
    put("cpuacct,cpu/x/cpu.cfs_period_us", "100000\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "2:cpuacct:/x\n"), 0);
    CHECK_INT_EQ(cpu_cgroup_limit(root, "2:cpuacct,cpu:/x\n"), 1);
    wipe();

    /* Hybrid (v1 cpu + v2 unified): both kinds of line in one file. */
    put("cpu.max", "800000 100000\n");
    put("cpu/a/cpu.cfs_quota_us", "200000\n");
    put("cpu/a/cpu.cfs_period_us", "100000\n");
    CHECK_INT_EQ(cpu_cgroup_limit(root, "1:cpu:/a\n0::/a\n"), 2);
    /* Malformed lines are skipped, not fatal. */
    CHECK_INT_EQ(cpu_cgroup_limit(root, "garbage\n::\n1:cpu:relative\n1:cpu:/a"), 2);
    wipe();
}

static void test_affinity(void)
{
    cpu_set_t original;
    CHECK_INT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
    unsigned all = cpu_affinity_count();
    CHECK_INT_EQ(all, CPU_COUNT(&original));
    unsigned avail = cpu_available();
    CHECK(avail >= 1 && avail <= all);
    fprintf(stderr, "this machine: affinity %u CPUs, cgroup limit %u (0 = none), available %u\n",
            all, cpu_cgroup_limit("/sys/fs/cgroup", NULL), avail);

    /* Pin to the first allowed CPU: both counts must follow. */
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &original))
            first = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK_INT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    CHECK_INT_EQ(cpu_affinity_count(), 1);
    CHECK_INT_EQ(cpu_available(), 1);
    CHECK_INT_EQ(sched_setaffinity(0, sizeof original, &original), 0);
    CHECK_INT_EQ(cpu_affinity_count(), all);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/test_cpu_XXXXXX");
    if (mkdtemp(root) == NULL) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    test_cgroup2_text();
    test_cgroup1_text();
    test_cgroup_trees();
    test_affinity();
    rmdir(root);
    return check_exit();
}
