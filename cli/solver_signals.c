/* cli/solver_signals.c — the CLI's signal handling while a planner may run
 * an external solver: SIGINT, SIGTERM and SIGHUP are caught (without
 * SA_RESTART) and handed to the planner library (plan_interrupt), which
 * passes them on to the solver subprocess, removes its files and returns
 * an error; cli_solver_signals_end then restores the previous actions and,
 * when a signal came, raises it again, so that dtrexec ends by it as
 * kill(1) or timeout(1) expect. The library itself never touches signals. */
#include <signal.h>
#include <string.h>

#include "cli/cli.h"
#include "dtr/sim/sim.h"

static const int caught[] = { SIGINT, SIGTERM, SIGHUP };
#define N_CAUGHT (sizeof caught / sizeof caught[0])
static struct sigaction saved[N_CAUGHT];
static int installed;

static void on_signal(int sig)
{
    plan_interrupt(sig);
}

void cli_solver_signals_begin(void)
{
    if (installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    plan_interrupt_clear();
    for (size_t k = 0; k < N_CAUGHT; k++)
        sigaction(caught[k], &sa, &saved[k]);
    installed = 1;
}

void cli_solver_signals_end(void)
{
    if (!installed)
        return;
    for (size_t k = 0; k < N_CAUGHT; k++)
        sigaction(caught[k], &saved[k], NULL);
    installed = 0;
    int sig = plan_interrupted();
    if (sig)
        raise(sig);
}
