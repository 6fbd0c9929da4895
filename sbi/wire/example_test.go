package wire_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi/wire"
)

func Example() {
	c, err := wire.New(wire.SBITypes()...)
	if err != nil {
		log.Fatal(err)
	}
	req := &models.Ausf_UEAU_UEAuthenticationCtx{
		AuthType:      models.Ausf_UEAU_AuthType_5_G_AKA,
		Var5gAuthData: models.Ausf_UEAU_Av5gAka{Rand: "00", Autn: "11", HxresStar: "22"},
	}
	buf := make([]byte, 0, 512) // reused: Append then allocates nothing
	buf, err = c.Append(buf[:0], req)
	if err != nil {
		log.Fatal(err)
	}
	var got models.Ausf_UEAU_UEAuthenticationCtx
	if err := c.Decode(buf, &got); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes: %+v\n", len(buf), got.Var5gAuthData)

	var other models.Ausf_UEAU_AuthenticationInfo
	err = c.Decode(buf, &other)
	fmt.Println("into another type:", errors.Is(err, wire.ErrLayoutMismatch))
	// Output:
	// 46 bytes: {Rand:00 HxresStar:22 Autn:11}
	// into another type: true
}
