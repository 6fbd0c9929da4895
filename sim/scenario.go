package sim

import (
	"fmt"
	"strings"
)

// Step is one procedure every UE runs in a scenario.
type Step string

// Steps.
const (
	StepRegister Step = "register" // initial registration with SUCI (or the stored GUTI if any)
	// StepReregister registers with the stored 5G-GUTI and security context:
	// from a registered UE, after releasing it to CM-IDLE (a mobility
	// registration update that reuses the context); after a deregistration,
	// an initial registration with the GUTI.
	StepReregister Step = "reregister"
	StepDeregister Step = "deregister" // UE-originating deregistration, normal
	StepSwitchOff  Step = "switchoff"  // UE-originating deregistration, switch off
)

// Scenario is the sequence of steps. All UEs finish a step (with the
// configured concurrency) before the next step starts, so each procedure's
// latencies are measured under the same load. A UE whose step failed skips
// the rest of the scenario.
type Scenario []Step

// Named scenarios accepted by ParseScenario besides comma-separated steps.
var namedScenarios = map[string]Scenario{
	"register":                      {StepRegister},
	"register+deregister":           {StepRegister, StepDeregister},
	"register+switchoff":            {StepRegister, StepSwitchOff},
	"register+reregister":           {StepRegister, StepReregister, StepDeregister},
	"register+reregister+switchoff": {StepRegister, StepReregister, StepSwitchOff},
}

// ParseScenario reads a named scenario ("register", "register+deregister",
// "register+switchoff", "register+reregister") or a comma-separated list of
// steps ("register,deregister,reregister,switchoff").
func ParseScenario(s string) (Scenario, error) {
	if sc, ok := namedScenarios[s]; ok {
		return append(Scenario(nil), sc...), nil
	}
	var sc Scenario
	for _, p := range strings.Split(s, ",") {
		st := Step(strings.TrimSpace(p))
		switch st {
		case StepRegister, StepReregister, StepDeregister, StepSwitchOff:
			sc = append(sc, st)
		default:
			return nil, fmt.Errorf("scenario %q: unknown step %q (want register, reregister, deregister, switchoff or one of %s)", s, st, scenarioNames())
		}
	}
	return sc, nil
}

func scenarioNames() string {
	return "register, register+deregister, register+switchoff, register+reregister, register+reregister+switchoff"
}

// String returns the comma-separated steps.
func (sc Scenario) String() string {
	parts := make([]string, len(sc))
	for i, s := range sc {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}
