// Package sandbox is the boundary between tools and the machine. A Workspace resolves
// every path a tool names inside one directory — lexically, through symlinks, and
// again when the file is opened (through os.Root, so a symlink swapped after the check
// still cannot reach outside) — and refuses the default-deny list (secrets, keys,
// repository internals) for the path asked for and for the file actually opened.
//
// Run (a command) and Command (a long-lived program such as a stdio MCP server)
// confine a process: turnlog starts itself again as a helper in new PID, mount and
// (usually) network namespaces and a cgroup of its own. The helper, root, sets a
// process limit and builds the process a root of its own in which the workspace is an
// overlay: an id-mapped view of it below (the command owns its files there) and a
// tmpfs of a fixed size above, where everything the command writes lands. Secrets
// (found by turnlog, with a cache of settled directories) are masked and every .git is
// read-only. The command starts as CommandUID, an unprivileged uid, from a thread that
// confined itself with Landlock (or hands over to an unprivileged bubblewrap) and a
// seccomp filter; bash sets the resource limits first. When the process ends, the
// helper kills whatever it left and applies what it wrote to the workspace —
// owned by the workspace's owner, without setuid bits or capabilities, refusing any
// change to .git or a new repository — and reports each change. In
// network-allowlist mode a proxy inside the process's network namespace is its only
// way out. Doctor probes all of it.
//
// It must never fall back to an unchecked open or run a process with less than it was
// asked for — a step that cannot be applied fails the call closed — never let a
// process write to the host except through the applied changes, and never decide what
// a tool may do (that is package policy): it only makes what was decided impossible
// to exceed.
package sandbox
