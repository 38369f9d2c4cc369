/* test_srv.c - the daemon transport's pieces that the CLI tests cannot time:
 * srv_run_task (SIGTERM while the model loads). */
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "server/srv.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void quick(void *arg) { *(int *)arg = 42; }
static void slow(void *arg) {
    (void)arg;
    sleep(30);
}

TEST(srv_run_task_returns_when_the_work_is_done_or_a_signal_comes) {
    char dir[256], path[300], err[256] = "";
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(path, sizeof path, "%s/t.sock", dir);
    srv_cfg cfg = srv_cfg_default();
    srv *s = NULL;
    CHECKF(srv_open(path, 0, &cfg, &s, err, sizeof err) == LAYA_OK, "%s", err);
    int v = 0;
    CHECK(srv_run_task(s, quick, &v) == 1 && v == 42);
    /* A load that never ends (a hung file system): SIGTERM must still end the wait. */
    pid_t self = getpid();
    if (fork() == 0) {
        usleep(200 * 1000);
        kill(self, SIGTERM);
        _exit(0);
    }
    double t0 = now_s();
    int r = srv_run_task(s, slow, NULL);
    double dt = now_s() - t0;
    srv_close(s);
    CHECKF(r == 0 && dt < 5, "srv_run_task returned %d after %.1f s", r, dt);
    CHECK(access(path, F_OK) != 0);   /* srv_close removed the socket */
    CHECK(rmdir(dir) == 0);           /* and its lock file */
}
