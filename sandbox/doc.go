// Package sandbox is the boundary between tools and the machine. A Workspace resolves
// every path a tool names inside one directory — lexically, through symlinks, and
// again when the file is opened (through os.Root, so a symlink swapped after the check
// still cannot reach outside) — and refuses the default-deny list (secrets, keys,
// credential stores, repository internals) for the path asked for and for the file
// actually opened.
//
// Run (a command) and Command (a long-lived program such as a stdio MCP server)
// confine a process: turnlog starts the helper — the small program sandbox/helper,
// which turnlog embeds and runs from a sealed memory file, else turnlog's own binary
// — in new PID, mount, IPC and (usually) network namespaces and a cgroup of its
// own. The helper, root, sets a process limit and builds the process a root of its
// own in which the workspace is an overlay: an id-mapped view of it below (the
// command owns its files there) and a tmpfs of a fixed size and number of entries
// above, where everything the command writes lands. Secrets (found by turnlog, with
// a cache of settled directories) are masked and every .git is read-only. The
// command starts as CommandUID, an unprivileged uid, with a HOME outside its
// workspace, from a thread that confined itself with Landlock (or hands over to an
// unprivileged bubblewrap) and a seccomp filter; bash sets the resource limits
// first. When the process ends, the helper kills whatever it left and applies what
// it wrote to the workspace, in two steps: a plan decided from two snapshots
// (apply_plan.go, a pure function), then its execution (apply_exec.go), under the
// workspace's lock, with a journal and a staging directory that let a crash at any
// point be taken back. In network-allowlist mode a proxy inside the process's
// network namespace, with caps of its own, is its only way out. Doctor probes all of
// it.
//
// Which process runs which file:
//
//	file                           turnlog   helper (root)   what it holds
//	exec.go                        x                          Spec, Run, the helper's command line
//	command.go                     x                          long-lived programs
//	helperexe.go                   x                          the helper binary in use
//	staging.go                     x                          the staging directory, its lock, settling, recovery at start
//	mask.go, maskwatch.go          x                          finding the masks (with the cache)
//	workspace.go                   x                          paths for the file tools, the writer lock
//	cgroup.go                      x         x (join)         the command's groups, the pool
//	proxy.go, netns.go             x                          the allowlist proxy and its namespace
//	descriptors.go                 x                          what turnlog's descriptors must hold
//	ids.go                         x         x (mount)        the id mapping
//	doctor.go                      x                          probes
//	helper.go                                x               HelperMain: every step, in order
//	processes.go                             x               the process limit
//	root.go, overlay.go                      x               the command's root and its workspace layers
//	mask_mount.go                            x               the masks mounted
//	confine.go, landlock.go                  x               the thread that starts the command, confined
//	seccomp.go, caps.go, bubblewrap.go       x               the filter, the capability sets, bwrap's arguments
//	apply.go                                 x               the apply, step by step
//	apply_snapshot.go                        x               the two snapshots, read through descriptors
//	apply_plan.go                            x               the plan (pure: tests build its snapshots in memory)
//	apply_exec.go                            x               the executor
//	apply_journal.go               x         x               the journal, rollback, recovery
//	apply_changes.go               x                          what an apply changed, path by path, before and after
//	restore.go                     x                          a revert: paths put back through the executor, with a journal
//	apply_report.go, git.go,       x         x               what is reported; git's protected names;
//	dirent.go                                                reading directories
//
// The confined command runs no code of this package: its first program is bash
// (limitedArgv in confine.go writes its first line), which sets the limits and
// becomes the command.
//
// It must never fall back to an unchecked open or run a process with less than it was
// asked for — a step that cannot be applied fails the call closed — never let a
// process write to the host except through the applied changes, never apply part of
// a command's changes (an apply lands whole or is taken back), and never decide what
// a tool may do (that is package policy): it only makes what was decided impossible
// to exceed.
package sandbox
