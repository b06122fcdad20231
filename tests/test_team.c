/* The compute team (model/team.c): every member in the run's width runs the
 * job once with that width, no member beyond it runs, and barriers wait for
 * exactly the width's members, also after the width changes. */
#include <stdatomic.h>

#include "check.h"
#include "team.h"

#define TEAM 3
#define ROUNDS 200

struct job_state {
    struct bert_team *team;
    atomic_int calls[TEAM];
    atomic_int bad_width;
    size_t want_width;
    /* Phase counters: after each barrier, every member must see all the
     * width's members' increments of the phase before. */
    atomic_int phase[ROUNDS];
    atomic_int torn;
};

static void job(void *arg, size_t member, size_t n)
{
    struct job_state *s = arg;
    atomic_fetch_add(&s->calls[member], 1);
    if (n != s->want_width || member >= n)
        atomic_fetch_add(&s->bad_width, 1);
    for (int r = 0; r < ROUNDS; r++) {
        atomic_fetch_add(&s->phase[r], 1);
        bert_team_barrier(s->team);
        if (atomic_load(&s->phase[r]) != (int)n)
            atomic_fetch_add(&s->torn, 1);
    }
}

static void run_at(struct bert_team *t, size_t width)
{
    struct job_state s = {.team = t, .want_width = width};
    bert_team_set_width(t, width);
    bert_team_run(t, job, &s);
    for (size_t m = 0; m < TEAM; m++)
        CHECK_INT_EQ(atomic_load(&s.calls[m]), m < width ? 1 : 0);
    CHECK_INT_EQ(atomic_load(&s.bad_width), 0);
    CHECK_INT_EQ(atomic_load(&s.torn), 0);
}

int main(void)
{
    struct bert_error err = {0};
    struct bert_team *t = bert_team_new(TEAM, &err);
    CHECK(t != NULL);
    if (t == NULL)
        return check_exit();
    CHECK_INT_EQ(bert_team_size(t), TEAM);
    /* Wide, narrow, back to wide, and out-of-range widths clamped. */
    const size_t widths[] = {3, 1, 2, 3, 2, 1, 3};
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++)
        run_at(t, widths[i]);
    struct job_state s = {.team = t, .want_width = TEAM};
    bert_team_set_width(t, 99);
    bert_team_run(t, job, &s);
    CHECK_INT_EQ(atomic_load(&s.bad_width), 0);
    struct job_state one = {.team = t, .want_width = 1};
    bert_team_set_width(t, 0);
    bert_team_run(t, job, &one);
    CHECK_INT_EQ(atomic_load(&one.bad_width), 0);
    bert_team_free(t);
    return check_exit();
}
