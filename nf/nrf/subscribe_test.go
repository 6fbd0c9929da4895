package nrf

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

func subscribe(t *testing.T, n *NRF, s *models.Nrf_NFMgmt_SubscriptionData) *models.Nrf_NFMgmt_SubscriptionData {
	t.Helper()
	out, err := n.Subscribe(context.Background(), s)
	if err != nil {
		t.Fatalf("subscribe %s: %v", s.NfStatusNotificationUri, err)
	}
	return out
}

// Each condition sees only its instances, for the three events.
func TestSubscriptionConditions(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	rec := newRecorder()
	n.SetNotifier(rec)
	byType := subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "by-type",
		SubscrCond: &models.Nrf_NFMgmt_SubscrCond{NfType: string(sbi.NFTypeSMF)}})
	subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "by-service",
		SubscrCond: &models.Nrf_NFMgmt_SubscrCond{ServiceName: models.Nrf_NFMgmt_ServiceName_NUDM_SDM}})
	subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "by-instance",
		SubscrCond: &models.Nrf_NFMgmt_SubscrCond{NfInstanceId: "amf-1"}})
	subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "deregistrations",
		ReqNotifEvents: []models.Nrf_NFMgmt_NotificationEventType{models.Nrf_NFMgmt_NotificationEventType_DEREGISTERED}})
	if byType.SubscriptionId == "" || byType.ValidityTime == nil {
		t.Fatalf("subscription answer %+v lacks subscriptionId or validityTime", byType)
	}

	mustRegister(t, n, profile("smf-1", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION))
	mustRegister(t, n, profile("udm-1", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM))
	mustRegister(t, n, profile("amf-1", sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM))
	mustRegister(t, n, profile("amf-2", sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM))
	// A changed profile (new address) is NF_PROFILE_CHANGED; the same one
	// again is nothing.
	changed := profile("smf-1", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	changed.Ipv4Addresses = []string{"10.0.0.2"}
	mustRegister(t, n, changed)
	mustRegister(t, n, changed)
	for _, id := range []string{"smf-1", "udm-1", "amf-1", "amf-2"} {
		if err := n.Deregister(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	for uri, want := range map[string][]string{
		"by-type":         {"NF_REGISTERED smf-1 REGISTERED", "NF_PROFILE_CHANGED smf-1 REGISTERED", "NF_DEREGISTERED smf-1"},
		"by-service":      {"NF_REGISTERED udm-1 REGISTERED", "NF_DEREGISTERED udm-1"},
		"by-instance":     {"NF_REGISTERED amf-1 REGISTERED", "NF_DEREGISTERED amf-1"},
		"deregistrations": {"NF_DEREGISTERED smf-1", "NF_DEREGISTERED udm-1", "NF_DEREGISTERED amf-1", "NF_DEREGISTERED amf-2"},
	} {
		if got := rec.wait(t, uri, len(want)); !slices.Equal(got, want) {
			t.Errorf("%s got %q\nwant %q", uri, got, want)
		}
	}
}

func TestUnsubscribe(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	rec := newRecorder()
	n.SetNotifier(rec)
	s := subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "gone"})
	keep := subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "kept"})
	if err := n.Unsubscribe(ctx, s.SubscriptionId); err != nil {
		t.Fatal(err)
	}
	if err := n.Unsubscribe(ctx, s.SubscriptionId); !errors.Is(err, sbi.ErrSubscriptionNotFound) {
		t.Fatalf("second unsubscribe: %v", err)
	}
	mustRegister(t, n, profile("pcf-1", sbi.NFTypePCF))
	if got := rec.wait(t, "kept", 1); len(got) != 1 {
		t.Fatalf("kept subscription got %q", got)
	}
	if got := rec.events("gone"); len(got) != 0 {
		t.Fatalf("removed subscription still notified: %q", got)
	}
	if err := n.Unsubscribe(ctx, keep.SubscriptionId); err != nil {
		t.Fatal(err)
	}
}

func TestSubscriptionValidity(t *testing.T) {
	ctx := context.Background()
	n, clk := newNRF(t, Config{SubscriptionValidity: time.Hour})
	rec := newRecorder()
	n.SetNotifier(rec)

	// The NRF grants what is asked up to its maximum.
	asked := clk.Now().Add(time.Minute)
	short := subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "short", ValidityTime: &asked})
	if !short.ValidityTime.Equal(asked) {
		t.Fatalf("validityTime %v, asked %v", short.ValidityTime, asked)
	}
	tooLong := clk.Now().Add(48 * time.Hour)
	long := subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "long", ValidityTime: &tooLong})
	if !long.ValidityTime.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("validityTime %v, want capped at 1h", long.ValidityTime)
	}
	past := clk.Now().Add(-time.Second)
	if _, err := n.Subscribe(ctx, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "x", ValidityTime: &past}); sbi.CauseOf(err) != sbi.CauseOptionalIEIncorrect {
		t.Fatalf("validityTime in the past: %v", err)
	}

	// After validityTime the subscription is over: nothing is notified, even
	// before the sweeper removes it, and it cannot be unsubscribed.
	clk.Advance(2 * time.Minute)
	mustRegister(t, n, profile("nssf-1", sbi.NFTypeNSSF))
	if got := rec.wait(t, "long", 1); len(got) != 1 {
		t.Fatalf("valid subscription got %q", got)
	}
	if got := rec.events("short"); len(got) != 0 {
		t.Fatalf("expired subscription notified: %q", got)
	}
	if err := n.Unsubscribe(ctx, short.SubscriptionId); !errors.Is(err, sbi.ErrSubscriptionNotFound) {
		t.Fatalf("unsubscribe of an expired subscription: %v", err)
	}
	n.expire(clk.Advance(time.Hour))
	n.mu.Lock()
	left := len(n.subs)
	n.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d subscriptions left after every validityTime passed", left)
	}
}

func TestSubscribeValidation(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	for name, c := range map[string]struct {
		s     *models.Nrf_NFMgmt_SubscriptionData
		cause string
	}{
		"nil":                   {nil, sbi.CauseMandatoryIEMissing},
		"no uri":                {&models.Nrf_NFMgmt_SubscriptionData{}, sbi.CauseMandatoryIEMissing},
		"unknown event":         {&models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "u", ReqNotifEvents: []models.Nrf_NFMgmt_NotificationEventType{"NF_EXPLODED"}}, sbi.CauseOptionalIEIncorrect},
		"unsupported condition": {&models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "u", SubscrCond: &models.Nrf_NFMgmt_SubscrCond{AmfSetId: "001"}}, sbi.CauseOptionalIEIncorrect},
	} {
		if _, err := n.Subscribe(ctx, c.s); sbi.CauseOf(err) != c.cause {
			t.Errorf("%s: %v, want %s", name, err, c.cause)
		}
	}
}

// blockingNotifier never answers before its deadline.
type blockingNotifier struct{ calls atomic.Int32 }

func (b *blockingNotifier) NFStatusNotify(ctx context.Context, uri string, n *models.Nrf_NFMgmt_NotificationData) error {
	b.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// A subscriber that never answers delays nobody: registrations go on,
// notifications beyond its queue are dropped, and Stop cancels the one in
// progress and ends every worker.
func TestSlowSubscriberBlocksNothing(t *testing.T) {
	n, _ := newNRF(t, Config{NotifyTimeout: time.Hour})
	slow := &blockingNotifier{}
	n.SetNotifier(slow)
	for range 3 {
		subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "slow"})
	}
	start := time.Now()
	for i := range 3 * notifyQueue {
		mustRegister(t, n, profile(string(rune('a'+i%26))+string(rune('a'+i/26)), sbi.NFTypeAMF))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("registrations took %v behind a stuck subscriber", d)
	}
	stopped := make(chan struct{})
	go func() { n.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("Stop waits for a stuck subscriber")
	}
	if c := slow.calls.Load(); c < 1 || c > 3 {
		t.Fatalf("%d notifications attempted, want one per worker at most", c)
	}
	if _, err := n.Subscribe(context.Background(), &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "late"}); err == nil {
		t.Fatal("subscribed to a stopped NRF")
	}
}

func TestNotificationTimeout(t *testing.T) {
	n, _ := newNRF(t, Config{NotifyTimeout: 10 * time.Millisecond})
	slow := &blockingNotifier{}
	n.SetNotifier(slow)
	subscribe(t, n, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "slow"})
	mustRegister(t, n, profile("a", sbi.NFTypeAMF))
	mustRegister(t, n, profile("b", sbi.NFTypeAMF))
	deadline := time.Now().Add(2 * time.Second)
	for slow.calls.Load() < 2 { // the second is sent once the first timed out
		if time.Now().After(deadline) {
			t.Fatal("a timed-out notification holds up the next one")
		}
		time.Sleep(time.Millisecond)
	}
}
