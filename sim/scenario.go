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
	"session":                       {StepRegister, StepSession, StepRelease, StepDeregister},
	"session+ping":                  {StepRegister, StepSession, StepPing, StepRelease, StepDeregister},
	"session+data":                  {StepRegister, StepSession, StepPing, StepTransfer, StepRelease, StepDeregister},
	"idle":                          {StepRegister, StepSession, StepIdle, StepService, StepRelease, StepDeregister},
	"idle+ping":                     {StepRegister, StepSession, StepPing, StepIdle, StepService, StepPing, StepRelease, StepDeregister},
}

// ParseScenario reads a named scenario ("register", "register+deregister",
// "register+switchoff", "register+reregister", "session", "session+ping",
// "session+data", "idle", "idle+ping") or a comma-separated list of steps
// ("register,session,ping,transfer,idle,service,release,deregister").
func ParseScenario(s string) (Scenario, error) {
	if sc, ok := namedScenarios[s]; ok {
		return append(Scenario(nil), sc...), nil
	}
	var sc Scenario
	for _, p := range strings.Split(s, ",") {
		st := Step(strings.TrimSpace(p))
		switch st {
		case StepRegister, StepReregister, StepDeregister, StepSwitchOff,
			StepSession, StepPing, StepTransfer, StepRelease, StepIdle, StepService:
			sc = append(sc, st)
		default:
			return nil, fmt.Errorf("scenario %q: unknown step %q (want register, reregister, deregister, switchoff, session, ping, transfer, release, idle, service or one of %s)", s, st, scenarioNames())
		}
	}
	return sc, nil
}

func scenarioNames() string {
	return "register, register+deregister, register+switchoff, register+reregister, register+reregister+switchoff, " +
		"session (register,session,release,deregister), session+ping, session+data (session+ping with transfer), " +
		"idle (register,session,idle,service,release,deregister), idle+ping (idle with ping before idle and after service)"
}

// String returns the comma-separated steps.
func (sc Scenario) String() string {
	parts := make([]string, len(sc))
	for i, s := range sc {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}
