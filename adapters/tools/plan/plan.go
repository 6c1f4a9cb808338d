package plan

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// ToolName is the tool's name, which an agent lists to be offered it.
const ToolName = "update_plan"

// Statuses of an item.
const (
	Pending    = "pending"
	InProgress = "in_progress"
	Done       = "done"
)

// Item is one step of a plan.
type Item struct {
	Text   string `json:"text" jsonschema:"minLength=1,maxLength=300,description=What the step does"`
	Status string `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=done,description=pending / in_progress / done"`
}

// Plan is what the agent is doing: a goal line and its steps.
type Plan struct {
	Goal  string `json:"goal,omitempty" jsonschema:"maxLength=300,description=The task's goal in one line"`
	Items []Item `json:"items" jsonschema:"minItems=1,maxItems=30,description=Every step of the plan in order: send the whole plan each time"`
}

const description = "Keep your plan for this task where the user can see it: a goal line and every step with its status (pending, in_progress, done). Call it when you start a task of several steps and whenever a step's status changes, sending the whole plan each time."

// Tool is update_plan: idempotent, and telling the policy it acts on nothing.
type Tool struct{ *functool.Tool[Plan] }

// New makes the update_plan tool.
func New() *Tool {
	return &Tool{functool.MustNew(ToolName, description, func(_ context.Context, p Plan) (any, error) {
		inProgress := 0
		for _, it := range p.Items {
			if it.Status == InProgress {
				inProgress++
			}
		}
		if inProgress > 1 {
			return nil, &fsm.ToolError{Message: fmt.Sprintf("%d steps are in_progress: keep one in progress at a time", inProgress), Public: true}
		}
		return p, nil
	})}
}

// Spec is the function's, idempotent: a plan sent twice is the same plan.
func (t *Tool) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.Idempotent, s.ShowErrors = true, true
	return s
}

// PolicyCall says a plan acts on nothing outside the log.
func (t *Tool) PolicyCall(json.RawMessage) fsm.PolicyCall {
	return fsm.PolicyCall{Level: policy.L0}
}
