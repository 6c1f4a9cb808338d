package turnlog

import (
	"time"

	"github.com/turnlog/turnlog/fsm"
)

// multiObserver tells every observer what the engine does.
type multiObserver []fsm.Observer

func (m multiObserver) ModelCalled(llm string, took time.Duration, failed bool) {
	for _, o := range m {
		o.ModelCalled(llm, took, failed)
	}
}

func (m multiObserver) ToolCalled(tool string, took time.Duration, failed bool) {
	for _, o := range m {
		o.ToolCalled(tool, took, failed)
	}
}

func (m multiObserver) TurnEnded(status string) {
	for _, o := range m {
		o.TurnEnded(status)
	}
}
