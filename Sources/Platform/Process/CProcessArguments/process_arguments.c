// CProcessArguments: the process's arguments, captured before any other code
// of the executable runs.
//
// Why: Swift's runtime on Linux finds argv by walking back from `environ`
// (it sits just before it on the initial stack). Anything that calls setenv
// before main moves `environ` to the heap: a constructor of a preloaded
// library (libfaketime's), or of a library linked in. The binary then saw no
// arguments at all: it printed its overview for `--version` and for `run`,
// exiting 0, so under systemd it never recorded. glibc hands every
// .init_array function argc and argv themselves; keeping those pointers is
// immune to whatever happens to the environment. The strings live on the
// initial stack for the life of the process.

#include "process_arguments.h"

#include <stddef.h>

static int captured_count;
static char **captured_arguments;

// Priority 101: before the executable's other constructors (0–100 are reserved).
__attribute__((constructor(101))) static void capture_process_arguments(int argc, char **argv, char **envp) {
    (void)envp;
    captured_count = argc;
    captured_arguments = argv;
}

int process_arguments_count(void) { return captured_arguments ? captured_count : 0; }

const char *process_argument(int index) {
    if (captured_arguments == NULL || index < 0 || index >= captured_count) return NULL;
    return captured_arguments[index];
}
