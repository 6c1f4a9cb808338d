// Package sandbox is the boundary between tools and the machine: a Workspace resolves
// every path a tool names inside one directory — lexically, through symlinks, and
// again when the file is opened (through os.Root, so a symlink swapped after the check
// still cannot reach outside) — and refuses the default-deny list (secrets, keys,
// repository internals) for the path asked for and for the file actually opened.
//
// It must never fall back to an unchecked open, and never decide what a tool may do
// (that is package policy): it only makes what was decided impossible to exceed.
package sandbox
