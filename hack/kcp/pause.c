/* The pod sandbox's process, and the workload of the e2e tests' real pods: sleeps, reaps the children it inherits as
   PID 1, and exits on SIGTERM or SIGINT, as the pause image does. No registry is reachable here to pull that one. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGINT, stop); signal(SIGTERM, stop); signal(SIGCHLD, reap);
  for (;;) pause();
}
