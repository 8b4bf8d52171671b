/*
 * The pod sandbox's "pause" process: holds the pod's namespaces open, reaps the zombies of
 * processes that end up re-parented to it (it is PID 1 when the pod shares its PID namespace),
 * and exits 0 on SIGTERM or SIGINT. Built with `gcc -static` so the image needs no libc.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    printf("pause.c (k8s-rs)\n");
    return 0;
  }
  if (getpid() != 1) {
    fprintf(stderr, "Warning: pause should be the first process\n");
  }
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("sigaction");
    return 1;
  }
  for (;;) {
    pause();
  }
  fprintf(stderr, "Error: infinite loop terminated\n");
  return 42;
}
