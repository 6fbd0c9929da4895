package sim

import (
	"fmt"
	"slices"
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
	// StepSession establishes a PDU session on each of Config.DNNs.
	StepSession Step = "session"
	// StepPing sends Config.PingCount ICMP echo requests through each
	// session to Config.DataTarget and matches the replies.
	StepPing Step = "ping"
	// StepTransfer sends Config.TransferBytes of UDP through each session.
	StepTransfer Step = "transfer"
	// StepRelease releases every PDU session (UE-requested).
	StepRelease Step = "release"
	// StepIdle takes every UE to CM-IDLE (AN release; a UE already idle
	// passes).
	StepIdle Step = "idle"
	// StepService runs a UE-triggered service request from CM-IDLE:
	// service type data, with every session in the Uplink data status, for
	// a UE with PDU sessions; signalling for one without.
	StepService Step = "service"
	// StepHandoverXn hands every UE to the next gNB (round robin over the
	// gNBs) by Xn handover; the UE runs a mobility registration update
	// when the target's TA is not in its TAI list. It needs a connected
	// UE with a PDU session and at least 2 gNBs.
	StepHandoverXn Step = "handover-xn"
	// StepHandoverN2 is StepHandoverXn by N2 handover (Handover Required
	// to Handover Notify, through the AMF).
	StepHandoverN2 Step = "handover-n2"
)

// allSteps lists the steps in the order the help shows them.
var allSteps = []Step{StepRegister, StepReregister, StepDeregister, StepSwitchOff, StepSession, StepPing, StepTransfer,
	StepRelease, StepIdle, StepService, StepHandoverXn, StepHandoverN2}

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
	"session":                       {StepRegister, StepSession, StepRelease, StepDeregister},
	"session+ping":                  {StepRegister, StepSession, StepPing, StepRelease, StepDeregister},
	"session+data":                  {StepRegister, StepSession, StepPing, StepTransfer, StepRelease, StepDeregister},
	"idle":                          {StepRegister, StepSession, StepIdle, StepService, StepRelease, StepDeregister},
	"idle+ping":                     {StepRegister, StepSession, StepPing, StepIdle, StepService, StepPing, StepRelease, StepDeregister},
	"handover":                      {StepRegister, StepSession, StepHandoverXn, StepHandoverN2, StepRelease, StepDeregister},
	"handover+ping":                 {StepRegister, StepSession, StepPing, StepHandoverXn, StepPing, StepHandoverN2, StepPing, StepRelease, StepDeregister},
}

// scenarioOrder lists the named scenarios in the order the help shows them.
var scenarioOrder = []string{"register", "register+deregister", "register+switchoff", "register+reregister",
	"register+reregister+switchoff", "session", "session+ping", "session+data", "idle", "idle+ping", "handover", "handover+ping"}

// ParseScenario reads a named scenario (ScenarioHelp lists them) or a
// comma-separated list of steps
// ("register,session,ping,handover-xn,handover-n2,release,deregister").
func ParseScenario(s string) (Scenario, error) {
	if sc, ok := namedScenarios[s]; ok {
		return append(Scenario(nil), sc...), nil
	}
	var sc Scenario
	for _, p := range strings.Split(s, ",") {
		st := Step(strings.TrimSpace(p))
		if !slices.Contains(allSteps, st) {
			return nil, fmt.Errorf("scenario %q: unknown step %q (want one of %s, or a named scenario: %s)", s, st, stepNames(), strings.Join(scenarioOrder, ", "))
		}
		sc = append(sc, st)
	}
	return sc, nil
}

func stepNames() string {
	names := make([]string, len(allSteps))
	for i, st := range allSteps {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// stepHelp says what each step does, one line each.
var stepHelp = map[Step]string{
	StepRegister:   "initial registration with SUCI",
	StepReregister: "registration with the stored 5G-GUTI (from CM-IDLE)",
	StepDeregister: "UE-originating deregistration",
	StepSwitchOff:  "deregistration, switch off",
	StepSession:    "a PDU session on each DNN (--dnns)",
	StepPing:       "ICMP echo through every session to the data target",
	StepTransfer:   "UDP transfer through every session",
	StepRelease:    "release every PDU session",
	StepIdle:       "AN release to CM-IDLE",
	StepService:    "UE-triggered service request from CM-IDLE",
	StepHandoverXn: "Xn handover to the next gNB (Path Switch; registration update if the TA changes)",
	StepHandoverN2: "N2 handover to the next gNB (Handover Required .. Notify; registration update if the TA changes)",
}

// ScenarioHelp describes every step and named scenario, one per line, for
// command-line help.
func ScenarioHelp() string {
	var b strings.Builder
	b.WriteString("steps (comma-separated):\n")
	for _, st := range allSteps {
		fmt.Fprintf(&b, "  %-12s %s\n", st, stepHelp[st])
	}
	b.WriteString("named scenarios:\n")
	for _, n := range scenarioOrder {
		fmt.Fprintf(&b, "  %-30s %s\n", n, namedScenarios[n])
	}
	return b.String()
}

// String returns the comma-separated steps.
func (sc Scenario) String() string {
	parts := make([]string, len(sc))
	for i, s := range sc {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}
