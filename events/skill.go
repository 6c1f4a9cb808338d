package events

const TypeSkillLoaded = "SkillLoaded"

// SkillLoaded records that an agent's model loaded a skill with load_skill: the
// call's output, which the model sees, is the skill's body and files. Nothing runs —
// skills are read at start —, so no ToolScheduled/ToolResulted is written for the
// call. Path `<agent>/skill/<call id>`. A replay whose skill file changed since the
// recording (another sha256) is nondeterminism.
type SkillLoaded struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Path   string `json:"path"`   // the skill's SKILL.md
	SHA256 string `json:"sha256"` // of SKILL.md when it was loaded
	Bytes  int    `json:"bytes"`  // of the output the model got
}

func (*SkillLoaded) EventType() string  { return TypeSkillLoaded }
func (*SkillLoaded) SchemaVersion() int { return 1 }
