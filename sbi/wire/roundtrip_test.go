package wire_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// sbiValues holds a pointer to every argument and result type of the sbi
// interfaces (../services.go, ../session.go) and to the errors they
// return. TestSBIValuesCoverInterfaces keeps it complete.
func sbiValues() []any {
	return []any{
		new(models.Udm_UECM_Amf3GppAccessRegistrationModification),
		new(models.Udr_DR_DataChangeNotify),
		new(models.Pcf_SMPolCtrl_TerminationNotification),
		// Nausf_UEAuthentication
		new(models.Ausf_UEAU_AuthenticationInfo),
		new(models.Ausf_UEAU_UEAuthenticationCtx),
		new(models.Ausf_UEAU_ConfirmationData),
		new(models.Ausf_UEAU_ConfirmationDataResponse),
		// Nudm_UEAuthentication
		new(models.Udm_UEAU_AuthenticationInfoRequest),
		new(models.Udm_UEAU_AuthenticationInfoResult),
		new(models.Udm_UEAU_AuthEvent),
		// Nudm_SDM, Nudm_UECM and their notifications
		new(models.Udm_SDM_AccessAndMobilitySubscriptionData),
		new(models.Udm_SDM_Nssai),
		new([]models.Udm_SDM_SessionManagementSubscriptionData),
		new(models.Udm_SDM_SmfSelectionSubscriptionData),
		new(models.Udm_UECM_Amf3GppAccessRegistration),
		new(models.Udm_UECM_DeregistrationData),
		new(models.Udm_SDM_ModificationNotification),
		new(sbi.SmDataQuery),
		// Nnssf_NSSelection
		new(models.Nssf_NSSel_AuthorizedNetworkSliceInfo),
		new([]identity.SNSSAI),
		new([]sbi.SubscribedSNSSAI),
		new(identity.TAI),
		new(identity.PLMN),
		// Nnrf
		new(models.Nrf_NFMgmt_NFProfile),
		new(models.Nrf_NFDisc_SearchResult),
		new(sbi.DiscoveryQuery),
		new(sbi.NFType),
		// Nudr_DataRepository
		new(models.Udr_DR_AuthenticationSubscription),
		new(models.Udr_DR_SequenceNumber),
		new(models.Udr_DR_AccessAndMobilitySubscriptionData),
		new(models.Udr_DR_SmSubsData),
		new(models.Udr_DR_SmfSelectionSubscriptionData),
		new([]models.PatchItem),
		new(models.Udr_DR_Amf3GppAccessRegistration),
		// Nsmf_PDUSession
		new(sbi.SMContextCreate),
		new(sbi.SMContextCreated),
		new(sbi.SMContextUpdate),
		new(sbi.SMContextUpdated),
		new(sbi.SMContextRelease),
		new(sbi.SMContextError),
		new(models.Smf_PDUSess_SmContextStatusNotification),
		// Namf_Communication
		new(sbi.N1N2Message),
		new(models.Amf_Comm_N1N2MessageTransferRspData),
		new(models.Amf_Comm_N1N2MsgTxfrFailureNotification),
		// Npcf_SMPolicyControl
		new(models.Pcf_SMPolCtrl_SmPolicyContextData),
		new(models.Pcf_SMPolCtrl_SmPolicyDecision),
		new(models.Pcf_SMPolCtrl_SmPolicyUpdateContextData),
		new(models.Pcf_SMPolCtrl_SmPolicyDeleteData),
		new(models.Pcf_SMPolCtrl_SmPolicyNotification),
		// errors, and the plain arguments
		new(sbi.ProblemDetails),
		new(string),
		new(int32),
		new(bool),
	}
}

// fillSBI fills v (from sbiValues) as wiretest.Fill does, except that the
// 5G-AKA vector goes where tern puts it.
func fillSBI(v any) {
	wiretest.Fill(v)
	if c, ok := v.(*models.Ausf_UEAU_UEAuthenticationCtx); ok {
		c.Var5gAuthData = models.Ausf_UEAU_Av5gAka{Rand: "0011", HxresStar: "2233", Autn: "4455"}
	}
}

func TestRoundTripSBITypes(t *testing.T) {
	c := newCodec(t, wire.SBITypes()...)
	for _, v := range sbiValues() {
		name := reflect.TypeOf(v).Elem().String()
		t.Run(name, func(t *testing.T) {
			fillSBI(v)
			if reflect.ValueOf(v).Elem().IsZero() {
				t.Fatal("Fill left the value zero")
			}
			got, msg := roundTrip(t, c, v)
			if d := diff(reflect.ValueOf(got), reflect.ValueOf(v), name); d != "" {
				t.Fatalf("round trip differs at %s", d)
			}
			// Fill makes UTC times without a monotonic reading, which
			// survive even reflect.DeepEqual.
			if !reflect.DeepEqual(got, v) {
				t.Fatal("round trip is not reflect.DeepEqual")
			}
			t.Logf("%d bytes", len(msg))
		})
	}
}

func TestRoundTripSamples(t *testing.T) {
	for _, s := range wiretest.Samples() {
		msg, err := wire.Append(nil, s.Value)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		got := s.New()
		if err := wire.Decode(msg, got); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if d := diff(reflect.ValueOf(got), reflect.ValueOf(s.Value), s.Name); d != "" {
			t.Fatalf("round trip differs at %s", d)
		}
	}
}

// TestAv5gAkaSurvives checks what the AMF reads after a round trip: both
// forms tern puts in Var5gAuthData, and a nil pointer.
func TestAv5gAkaSurvives(t *testing.T) {
	av := models.Ausf_UEAU_Av5gAka{Rand: "00", Autn: "11", HxresStar: "22"}
	c := newCodec(t, wire.SBITypes()...)
	for _, data := range []any{av, &av, (*models.Ausf_UEAU_Av5gAka)(nil)} {
		in := &models.Ausf_UEAU_UEAuthenticationCtx{AuthType: models.Ausf_UEAU_AuthType_5_G_AKA, Var5gAuthData: data}
		got, _ := roundTrip(t, c, in)
		out := got.(*models.Ausf_UEAU_UEAuthenticationCtx)
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("%T: got %#v, want %#v", data, out.Var5gAuthData, data)
		}
		if a, err := sbi.Av5gAkaOf(out); data != (*models.Ausf_UEAU_Av5gAka)(nil) && (err != nil || a != av) {
			t.Fatalf("%T: Av5gAkaOf = %v, %v", data, a, err)
		}
	}
}

// TestSBIValuesCoverInterfaces parses the sbi interfaces and fails when a
// method takes or returns a type that sbiValues lacks.
func TestSBIValuesCoverInterfaces(t *testing.T) {
	have := map[string]bool{}
	for _, v := range sbiValues() {
		have[reflect.TypeOf(v).Elem().String()] = true
	}
	// sbi.NFType is an alias, which reflect names by its target.
	alias := map[string]string{"sbi.NFType": "models.Nrf_NFMgmt_NFType"}
	fset := token.NewFileSet()
	n := 0
	for _, file := range []string{"../services.go", "../session.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			it, ok := node.(*ast.InterfaceType)
			if !ok {
				return true
			}
			for _, m := range it.Methods.List {
				ft, ok := m.Type.(*ast.FuncType)
				if !ok {
					continue
				}
				lists := []*ast.FieldList{ft.Params, ft.Results}
				for _, l := range lists {
					if l == nil {
						continue
					}
					for _, p := range l.List {
						name := sbiTypeName(p.Type)
						if name == "context.Context" || name == "error" {
							continue
						}
						if a, ok := alias[name]; ok {
							name = a
						}
						n++
						if !have[name] {
							t.Errorf("%s: %s uses %s, which sbiValues lacks", file, m.Names[0].Name, name)
						}
					}
				}
			}
			return true
		})
	}
	if n < 40 {
		t.Fatalf("found only %d parameter types; did the parsing break?", n)
	}
}

// sbiTypeName spells a type of package sbi as reflect does: a pointer
// stands for its pointee, local names get the "sbi." qualifier.
func sbiTypeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return sbiTypeName(e.X)
	case *ast.ArrayType:
		return "[]" + sbiTypeName(e.Elt)
	case *ast.Ident:
		if types.Universe.Lookup(e.Name) != nil {
			return e.Name
		}
		return "sbi." + e.Name
	}
	return strings.TrimSpace(types.ExprString(e))
}

// Every message of every operation (what the shared-memory binding sends)
// round-trips.
func TestRoundTripOperationMessages(t *testing.T) {
	c := newCodec(t, wire.SBITypes()...)
	for _, op := range ops.All {
		for _, v := range []any{op.NewRequest(), op.NewResponse()} {
			name := op.String() + "/" + reflect.TypeOf(v).Elem().Name()
			wiretest.Fill(v)
			got, _ := roundTrip(t, c, v)
			if d := diff(reflect.ValueOf(got), reflect.ValueOf(v), name); d != "" {
				t.Errorf("%s: round trip differs at %s", name, d)
			}
		}
	}
}
