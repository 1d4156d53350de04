// CProcessArguments: the process's arguments as the kernel passed them.
#pragma once

// The number of arguments, argv[0] included; 0 if they were never captured.
int process_arguments_count(void);
// Argument `index` (0 ≤ index < count), or NULL.
const char *process_argument(int index);
