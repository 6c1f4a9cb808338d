// Package sandbox is the boundary between tools and the machine. A Workspace resolves
// every path a tool names inside one directory — lexically, through symlinks, and
// again when the file is opened (through os.Root, so a symlink swapped after the check
// still cannot reach outside) — and refuses the default-deny list (secrets, keys,
// repository internals) for the path asked for and for the file actually opened.
//
// Run (a command) and Command (a long-lived program such as a stdio MCP server)
// confine a process: turnlog starts itself again as a helper in new PID, mount and
// (usually) network namespaces, which sets a process limit, builds the process a root
// of its own, hides the workspace's secrets, restricts itself with Landlock (or hands
// over to bubblewrap), drops every capability, installs a seccomp filter, sets
// resource limits and becomes the process. In network-allowlist mode a proxy inside
// the process's network namespace is its only way out. Doctor probes all of it.
//
// It must never fall back to an unchecked open or run a process with less than it was
// asked for — a step that cannot be applied fails the call closed — and never decide
// what a tool may do (that is package policy): it only makes what was decided
// impossible to exceed.
package sandbox
