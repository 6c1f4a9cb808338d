// Package workspacetools holds the built-in file tools — read_file, write_file, glob,
// grep — that work in a sandbox.Workspace. Every result says whether and why it was
// truncated; each tool tells the policy what a call acts on (fsm.PolicyTarget).
//
// They must never open a path except through the workspace, and never follow a
// symlink out of it.
package workspacetools
