/* relay: the least a process between an MCP client and its server can
   do. It starts argv[1..] with two pipes, and copies stdin to the
   server's stdin on one thread and the server's stdout to stdout on
   another, each blocked in read(2): one wake-up per crossing, no event
   loop. Its exit status is the server's. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct pair { int from, to; };

static void *copy(void *arg) {
	struct pair *p = arg;
	char buf[65536];
	for (;;) {
		ssize_t n = read(p->from, buf, sizeof buf);
		if (n <= 0) break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(p->to, buf + off, n - off);
			if (w <= 0) return NULL;
			off += w;
		}
	}
	close(p->to);
	return NULL;
}

int main(int argc, char **argv) {
	int in[2], out[2];
	if (argc < 2 || pipe(in) || pipe(out)) return 1;
	signal(SIGPIPE, SIG_IGN);
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		dup2(in[0], 0); dup2(out[1], 1);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(in[0]); close(out[1]);
	struct pair up = {0, in[1]}, down = {out[0], 1};
	pthread_t t;
	pthread_create(&t, NULL, copy, &up);
	copy(&down);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
