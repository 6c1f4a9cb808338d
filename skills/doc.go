// Package skills reads an agent's skills: folders with a SKILL.md (YAML front matter —
// name, description, triggers, required tools, permissions — then the body), and
// optional references/ and scripts/. It loads every skill once, at start, so a turn
// never reads a skill file: the index (name, description, path) goes into the agent's
// instructions, and the body reaches the model only when it calls load_skill.
//
// A malformed SKILL.md stops the start with its file and line. A skill never grants
// anything: its permissions are what it needs, checked against the policy when it is
// loaded, and a skill asking for more than the policy gives is refused.
package skills
