// Package policy decides whether a tool call may run: allow, deny or
// require_approval, from rules over subject (agent, skill, tool), action (read,
// write, execute, network, delete) and resource (path, command, domain), with the
// mode's defaults where no rule matches. Shell commands are classified by parsing
// them (mvdan.cc/sh): every command in every construct, looked through known
// wrappers, each with a risk level L0–L5.
//
// It must never decide by matching a command line as text, never run anything, and
// never widen a decision because of what a model, a skill or a tool result says.
package policy
