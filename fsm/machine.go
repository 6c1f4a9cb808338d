package fsm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lfsm "github.com/looplab/fsm"
)

// State is where a turn stands.
type State string

const (
	StateStarted        State = "started"
	StateGuardingInput  State = "guarding_input"
	StateCallingModel   State = "calling_model"
	StateRunningTools   State = "running_tools"
	StateGuardingOutput State = "guarding_output"
	StateCommitted      State = "committed"
	StateSuspended      State = "suspended"
	StateFailed         State = "failed"
	StateCanceled       State = "canceled"
)

// Trigger names a transition.
type Trigger string

const (
	TriggerGuardInput  Trigger = "guard_input"
	TriggerCallModel   Trigger = "call_model"
	TriggerRunTools    Trigger = "run_tools"
	TriggerGuardOutput Trigger = "guard_output"
	TriggerCommit      Trigger = "commit"
	TriggerSuspend     Trigger = "suspend"
	TriggerResume      Trigger = "resume"
	TriggerFail        Trigger = "fail"
	TriggerCancel      Trigger = "cancel"
)

// Transition is one row of the turn machine's table.
type Transition struct {
	Trigger Trigger
	From    []State
	To      State
}

var live = []State{StateStarted, StateGuardingInput, StateCallingModel, StateRunningTools, StateGuardingOutput}

// Transitions is the turn machine as data: every legal move, in reading order.
func Transitions() []Transition {
	return []Transition{
		{TriggerGuardInput, []State{StateStarted}, StateGuardingInput},
		{TriggerCallModel, []State{StateGuardingInput, StateRunningTools, StateGuardingOutput}, StateCallingModel},
		{TriggerRunTools, []State{StateCallingModel}, StateRunningTools},
		{TriggerGuardOutput, []State{StateCallingModel}, StateGuardingOutput},
		{TriggerCommit, []State{StateGuardingOutput}, StateCommitted},
		{TriggerSuspend, []State{StateGuardingInput, StateCallingModel, StateRunningTools, StateGuardingOutput}, StateSuspended},
		{TriggerResume, []State{StateSuspended}, StateStarted},
		{TriggerFail, append(append([]State{}, live...), StateSuspended), StateFailed},
		{TriggerCancel, append(append([]State{}, live...), StateSuspended), StateCanceled},
	}
}

// TransitionError says a trigger is not legal in a state.
type TransitionError struct {
	State   State
	Trigger Trigger
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("turn machine: %s is not allowed in state %s", e.Trigger, e.State)
}

// Machine is one turn's state machine.
type Machine struct{ m *lfsm.FSM }

// NewMachine builds a machine in state s.
func NewMachine(s State) *Machine {
	var evs lfsm.Events
	for _, t := range Transitions() {
		src := make([]string, len(t.From))
		for i, f := range t.From {
			src[i] = string(f)
		}
		evs = append(evs, lfsm.EventDesc{Name: string(t.Trigger), Src: src, Dst: string(t.To)})
	}
	return &Machine{m: lfsm.NewFSM(string(s), evs, nil)}
}

// State returns the current state.
func (m *Machine) State() State { return State(m.m.Current()) }

// Fire moves the machine; a refused move is a *TransitionError.
func (m *Machine) Fire(t Trigger) error {
	from := m.State()
	// The turn's own context never cancels a transition: an already-cancelled context
	// would leave looplab/fsm mid-transition for good.
	err := m.m.Event(context.Background(), string(t))
	var noTransition lfsm.NoTransitionError
	if err == nil || errors.As(err, &noTransition) {
		return nil
	}
	return &TransitionError{State: from, Trigger: t}
}

// Table renders the transitions as a Markdown table.
func Table() string {
	var b strings.Builder
	b.WriteString("| trigger | from | to |\n| --- | --- | --- |\n")
	for _, t := range Transitions() {
		from := make([]string, len(t.From))
		for i, f := range t.From {
			from[i] = "`" + string(f) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` |\n", t.Trigger, strings.Join(from, ", "), t.To)
	}
	return b.String()
}

// Mermaid renders the transitions as a Mermaid state diagram for the docs.
func Mermaid() string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n    [*] --> started\n")
	for _, t := range Transitions() {
		for _, f := range t.From {
			fmt.Fprintf(&b, "    %s --> %s: %s\n", f, t.To, t.Trigger)
		}
	}
	for _, s := range []State{StateCommitted, StateFailed, StateCanceled} {
		fmt.Fprintf(&b, "    %s --> [*]\n", s)
	}
	return b.String()
}
