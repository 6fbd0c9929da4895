package ausf

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nf/udm"
	"github.com/tern5g/tern/nf/udr"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/store"
)

var plmn = identity.PLMN{MCC: "208", MNC: "93"}

type core struct {
	st     *store.Store
	udm    *udm.UDM
	ausf   *AUSF
	keyA   suci.HomeNetworkKey
	keyB   suci.HomeNetworkKey
	snn    string
	opSUPI string // subscriber provisioned with OP instead of OPc
	op     []byte
}

func newCore(t testing.TB) *core {
	t.Helper()
	st, err := store.OpenOptions(filepath.Join(t.TempDir(), "subscribers.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	subs := store.DefaultSubscribers(2)
	opSub := subs[1].Clone()
	opSub.SUPI = store.DemoSUPI(3)
	opSub.OP = store.HexBytes(bytes.Repeat([]byte{0x5a}, 16))
	opSub.OPType = store.OPTypeOP
	subs = append(subs, opSub)
	if _, err := st.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	r, err := udr.New(udr.Config{}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	keyA, err := suci.GenerateHomeNetworkKey(1, suci.SchemeProfileA)
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := suci.GenerateHomeNetworkKey(2, suci.SchemeProfileB)
	if err != nil {
		t.Fatal(err)
	}
	u, err := udm.New(udm.Config{HomeNetworkKeys: []udm.HomeNetworkKey{
		{ID: 1, Scheme: "profileA", PrivateKey: hex.EncodeToString(keyA.Private)},
		{ID: 2, Scheme: "profileB", PrivateKey: hex.EncodeToString(keyB.Private)},
	}}, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{ServingPLMNs: []string{"20893"}}, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &core{st: st, udm: u, ausf: a, keyA: keyA, keyB: keyB,
		snn: kdf.ServingNetworkName(plmn), opSUPI: opSub.SUPI, op: opSub.OP}
}

// usimFor returns the USIM of a stored subscriber, as the UE holds it.
func (c *core) usimFor(t testing.TB, supi string) *milenage.USIM {
	t.Helper()
	sub, err := c.st.Get(supi)
	if err != nil {
		t.Fatal(err)
	}
	opc := []byte(sub.OP)
	if sub.OPType == store.OPTypeOP {
		if opc, err = milenage.OPc(sub.K, sub.OP); err != nil {
			t.Fatal(err)
		}
	}
	return &milenage.USIM{K: sub.K, OPc: opc, AMF: sub.AMF}
}

// ueResult is what the UE side derives from a challenge.
type ueResult struct {
	resStar, kseaf []byte
}

// answer runs the UE (USIM + ME) side of 5G-AKA (TS 33.501 §6.1.3.2
// steps 6-7) and the SEAF's HRES* check (step 8).
func (c *core) answer(t testing.TB, usim *milenage.USIM, actx *models.Ausf_UEAU_UEAuthenticationCtx) (ueResult, error) {
	t.Helper()
	av, err := sbi.Av5gAkaOf(actx)
	if err != nil {
		t.Fatal(err)
	}
	rnd, _ := hex.DecodeString(av.Rand)
	autn, _ := hex.DecodeString(av.Autn)
	res, ck, ik, err := usim.Authenticate(rnd, autn)
	if err != nil {
		return ueResult{}, err
	}
	resStar := kdf.RESStar(ck, ik, c.snn, rnd, res)
	if got := hex.EncodeToString(kdf.HXRESStar(rnd, resStar)); got != av.HxresStar {
		t.Fatalf("SEAF: HRES* %s != HXRES* %s", got, av.HxresStar)
	}
	kausf := kdf.KAUSF(ck, ik, c.snn, autn[:6])
	return ueResult{resStar: resStar, kseaf: kdf.KSEAF(kausf, c.snn)}, nil
}

func (c *core) authenticate(t testing.TB, id string, resync *models.Udm_UEAU_ResynchronizationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	return c.ausf.Authenticate(context.Background(), &models.Ausf_UEAU_AuthenticationInfo{
		SupiOrSuci: id, ServingNetworkName: c.snn, ResynchronizationInfo: resync,
	})
}

func (c *core) confirm(t testing.TB, authCtxID string, resStar []byte) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	s := hex.EncodeToString(resStar)
	return c.ausf.Confirm5gAka(context.Background(), authCtxID, &models.Ausf_UEAU_ConfirmationData{ResStar: &s})
}

// fullAKA runs a complete successful 5G-AKA for the subscriber id (SUPI or
// SUCI) and checks both sides agree on KSEAF.
func (c *core) fullAKA(t *testing.T, id, supi string, usim *milenage.USIM) {
	t.Helper()
	authCtxID, actx, err := c.authenticate(t, id, nil)
	if err != nil {
		t.Fatalf("Authenticate(%s): %v", id, err)
	}
	if actx.ServingNetworkName != c.snn || len(actx.Links["5g-aka"]) != 1 {
		t.Fatalf("authentication context: %+v", actx)
	}
	ue, err := c.answer(t, usim, actx)
	if err != nil {
		t.Fatalf("USIM rejected the challenge: %v", err)
	}
	resp, err := c.confirm(t, authCtxID, ue.resStar)
	if err != nil {
		t.Fatalf("Confirm5gAka: %v", err)
	}
	if resp.AuthResult != models.Ausf_UEAU_AuthResult_SUCCESS || resp.Supi != supi {
		t.Fatalf("confirmation = %+v, want success for %s", resp, supi)
	}
	if resp.Kseaf != hex.EncodeToString(ue.kseaf) {
		t.Fatalf("KSEAF differs: network %s, UE %x", resp.Kseaf, ue.kseaf)
	}
	if ev, ok := c.udm.LastAuthEvent(supi); !ok || !ev.Success {
		t.Fatalf("UDM did not record the successful authentication: %+v %v", ev, ok)
	}
}

func TestFiveGAKAWithSUPI(t *testing.T) {
	c := newCore(t)
	supi := store.DemoSUPI(1)
	usim := c.usimFor(t, supi)
	c.fullAKA(t, supi, supi, usim)
	// A second run uses a fresh SQN the USIM accepts.
	c.fullAKA(t, supi, supi, usim)
	if c.ausf.Pending() != 0 {
		t.Fatalf("%d contexts left after confirmation", c.ausf.Pending())
	}
}

func TestFiveGAKAWithOP(t *testing.T) {
	c := newCore(t)
	c.fullAKA(t, c.opSUPI, c.opSUPI, c.usimFor(t, c.opSUPI))
}

func TestFiveGAKAWithSUCI(t *testing.T) {
	c := newCore(t)
	supi := store.DemoSUPI(2)
	msin := supi[len("imsi-20893"):]
	usim := c.usimFor(t, supi)

	null, err := suci.NullScheme(plmn, "0", msin)
	if err != nil {
		t.Fatal(err)
	}
	c.fullAKA(t, null.String(), supi, usim)

	for _, k := range []suci.HomeNetworkKey{c.keyA, c.keyB} {
		pub, err := k.Public()
		if err != nil {
			t.Fatal(err)
		}
		s, err := suci.Conceal(plmn, "0", msin, k.Scheme, k.ID, pub)
		if err != nil {
			t.Fatal(err)
		}
		c.fullAKA(t, s.String(), supi, usim)
	}
}

func TestWrongRESStar(t *testing.T) {
	c := newCore(t)
	supi := store.DemoSUPI(1)
	authCtxID, actx, err := c.authenticate(t, supi, nil)
	if err != nil {
		t.Fatal(err)
	}
	ue, err := c.answer(t, c.usimFor(t, supi), actx)
	if err != nil {
		t.Fatal(err)
	}
	ue.resStar[0] ^= 1
	resp, err := c.confirm(t, authCtxID, ue.resStar)
	if err != nil {
		t.Fatal(err)
	}
	if resp.AuthResult != models.Ausf_UEAU_AuthResult_FAILURE || resp.Supi != "" || resp.Kseaf != "" {
		t.Fatalf("wrong RES*: %+v, want AUTHENTICATION_FAILURE without SUPI/KSEAF", resp)
	}
	if ev, ok := c.udm.LastAuthEvent(supi); !ok || ev.Success {
		t.Fatalf("UDM event after failure: %+v %v", ev, ok)
	}
	// The context is consumed: no second guess. The same confirmation
	// repeated (a PUT) gets the same answer.
	if again, err := c.confirm(t, authCtxID, ue.resStar); err != nil || !reflect.DeepEqual(again, resp) {
		t.Fatalf("repeated confirmation: %+v, %v; want %+v", again, err, resp)
	}
	ue.resStar[1] ^= 1
	if _, err := c.confirm(t, authCtxID, ue.resStar); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("second guess: %v, want CONTEXT_NOT_FOUND", err)
	}
}

func TestUnknownSubscriber(t *testing.T) {
	c := newCore(t)
	_, _, err := c.authenticate(t, "imsi-208930000009999", nil)
	if !errors.Is(err, sbi.ErrUserNotFound) || sbi.CauseOf(err) != sbi.CauseUserNotFound {
		t.Fatalf("unknown SUPI: %v, want USER_NOT_FOUND", err)
	}
	null, _ := suci.NullScheme(plmn, "0", "0000009999")
	if _, _, err := c.authenticate(t, null.String(), nil); sbi.CauseOf(err) != sbi.CauseUserNotFound {
		t.Fatalf("unknown SUCI: %v, want USER_NOT_FOUND", err)
	}
}

func TestServingNetworkNotAuthorized(t *testing.T) {
	c := newCore(t)
	_, _, err := c.ausf.Authenticate(context.Background(), &models.Ausf_UEAU_AuthenticationInfo{
		SupiOrSuci:         store.DemoSUPI(1),
		ServingNetworkName: kdf.ServingNetworkName(identity.PLMN{MCC: "001", MNC: "01"}),
	})
	if !errors.Is(err, sbi.ErrServingNetworkNotAuthorized) || sbi.StatusOf(err) != 403 {
		t.Fatalf("foreign SNN: %v, want 403 SERVING_NETWORK_NOT_AUTHORIZED", err)
	}
	if _, _, err := c.ausf.Authenticate(context.Background(), &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: store.DemoSUPI(1)}); !errors.Is(err, sbi.ErrMandatoryIEMissing) {
		t.Fatalf("missing SNN: %v", err)
	}
}

// TS 33.102 §6.3.5: the USIM is ahead of the network (e.g. the UDR was
// restored from an old backup); AUTS brings the network forward.
func TestResynchronisation(t *testing.T) {
	c := newCore(t)
	supi := store.DemoSUPI(1)
	usim := c.usimFor(t, supi)
	usim.SQN = 1 << 30

	_, actx, err := c.authenticate(t, supi, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.answer(t, usim, actx)
	var syncErr *milenage.SyncError
	if !errors.As(err, &syncErr) {
		t.Fatalf("USIM: %v, want synch failure", err)
	}
	av, _ := sbi.Av5gAkaOf(actx)

	// A forged AUTS is rejected.
	bad := bytes.Clone(syncErr.AUTS)
	bad[13] ^= 1
	_, _, err = c.authenticate(t, supi, &models.Udm_UEAU_ResynchronizationInfo{Rand: av.Rand, Auts: hex.EncodeToString(bad)})
	if !errors.Is(err, sbi.ErrAuthenticationRejected) {
		t.Fatalf("forged AUTS: %v, want AUTHENTICATION_REJECTED", err)
	}

	authCtxID, actx, err := c.authenticate(t, supi, &models.Udm_UEAU_ResynchronizationInfo{Rand: av.Rand, Auts: hex.EncodeToString(syncErr.AUTS)})
	if err != nil {
		t.Fatalf("Authenticate with resynchronisation info: %v", err)
	}
	ue, err := c.answer(t, usim, actx)
	if err != nil {
		t.Fatalf("USIM after resync: %v", err)
	}
	resp, err := c.confirm(t, authCtxID, ue.resStar)
	if err != nil || resp.AuthResult != models.Ausf_UEAU_AuthResult_SUCCESS {
		t.Fatalf("confirmation after resync: %+v, %v", resp, err)
	}
	sub, _ := c.st.Get(supi)
	if sub.SQN <= 1<<30 || sub.SQN != usim.SQN {
		t.Fatalf("SQN_HE %d, USIM SQN %d: want equal and above SQN_MS %d", sub.SQN, usim.SQN, 1<<30)
	}
}

func TestContextExpires(t *testing.T) {
	c := newCore(t)
	now := time.Unix(1000, 0)
	c.ausf.now = func() time.Time { return now }
	supi := store.DemoSUPI(1)
	authCtxID, actx, err := c.authenticate(t, supi, nil)
	if err != nil {
		t.Fatal(err)
	}
	ue, err := c.answer(t, c.usimFor(t, supi), actx)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultContextTTL + time.Second)
	if _, err := c.confirm(t, authCtxID, ue.resStar); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("expired context: %v, want CONTEXT_NOT_FOUND", err)
	}
	// Unconfirmed contexts are swept by later authentications.
	if _, _, err := c.authenticate(t, supi, nil); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultContextTTL + time.Second)
	if _, _, err := c.authenticate(t, supi, nil); err != nil {
		t.Fatal(err)
	}
	if n := c.ausf.Pending(); n != 1 {
		t.Fatalf("%d pending contexts, want 1 (expired ones swept)", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "servingPlmns"},
		{Config{ServingPLMNs: []string{"20893", "2089"}}, "servingPlmns[1]"},
		{Config{ServingPLMNs: []string{"20893"}, ContextTTL: -time.Second}, "contextTtl"},
	} {
		err := c.cfg.Validate()
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("Validate(%+v) = %v, want error naming %s", c.cfg, err, c.want)
		}
	}
}
