#include "textflag.h"

// func lookup4asm(list *rtRef, n int, h *Header, best uint64) (b uint64, i int)
//
// lookup4Go (ranked.go), written out so that its state stays in registers
// (the Go compiler spills about ten values a probe to the stack), and with
// one addition Go has no instruction for: a probe prefetches its group's
// slots beside the control word (see below). A match on a final slot
// (markFinal) ends the search once its tuple is done, by moving the end
// of the list (R10) to just past that tuple. It probes kindAddr4 tuples,
// port-keyed ones (kindAddr4P) and a split's (kindPorts), and returns at
// any other. Offsets:
// rtRef best 0, ms 8, md 12, kind 16, fin 20, ng 24, ctrl 32, slots 56 (96
// bytes); Header SrcIP.Lo 8, DstIP.Lo 24, QFI 52, Proto 54, SrcPort 72,
// DstPort 74; rslot rank 0, src 8, dst 12, sport 16, dport 20, ss 24, sd 25, proto
// 26, pmask 27, aux 28 (32 bytes). TestLookup4Layout checks them.
//
// Registers: SI tuple, R10 end of list, DI header, R8 best, R9 the
// header's dst<<32|src, R11 control-byte pattern, R12 control words, R13
// slots, DX group, R15 candidates; AX BX CX R14 scratch. X0 the control
// word, X1 the pattern (upper half all ones), X2 the control word again,
// X3 ctrlEmpty in every byte, X7 all ones.
//
// A group's control word is tested with SSE2 (baseline on amd64), as in
// Abseil's Swiss tables: PCMPEQB against the pattern and PMOVMSKB give
// the candidate slots as bits 0-7, exactly, in four instructions, where
// the 64-bit zero-byte trick took eleven (and flagged a byte above a
// match now and then).
TEXT ·lookup4asm(SB), NOSPLIT, $0-48
	PCMPEQB X7, X7
	MOVQ $0x8080808080808080, AX
	MOVQ AX, X3
	PUNPCKLQDQ X3, X3
	MOVQ list+0(FP), SI
	MOVQ n+8(FP), R10
	IMULQ $96, R10
	ADDQ SI, R10
	MOVQ h+16(FP), DI
	MOVQ best+24(FP), R8
	MOVL 24(DI), R9
	SHLQ $32, R9
	MOVL 8(DI), AX
	ORQ  AX, R9

	// The two loop heads start on 32-byte boundaries: in 12 rounds of the
	// 100k sets, shuffled against the same code unaligned, lookups were
	// lower in 9-11 of 12 (medians acl1 35.5 against 40.9 ns, fw1 43.7
	// against 49.2, ipc1 37.8 against 43.0). Where a loop falls in the
	// instruction cache's 32-byte windows otherwise depends on how much
	// code precedes it.
	PCALIGN $32
tuple:
	CMPQ SI, R10
	JEQ  finished
	MOVQ 0(SI), AX
	CMPQ AX, R8
	JCC  finished           // e.best >= best: no tuple left can do better
	CMPB 16(SI), $0         // kindAddr4
	JNE  otherkind
	MOVQ 8(SI), AX          // md<<32 | ms
	ANDQ R9, AX
	ROLQ $32, AX            // key: (src&ms)<<32 | (dst&md)

keyed:
	MOVQ $0x9e3779b97f4a7c15, BX
	XORQ BX, AX
	MOVQ $0xc2b2ae3d27d4eb4f, BX
	MULQ BX
	XORQ DX, AX             // x = rtMix(key)
	MOVQ AX, R11
	MULQ 24(SI)             // DX = group: x*ng >> 64
	SHRQ $24, R11
	ANDQ $0x7f, R11
	MOVQ $0x0101010101010101, BX
	IMULQ BX, R11           // pattern: rtH2(x) in every byte
	MOVQ R11, X1
	PUNPCKLQDQ X7, X1       // upper half: no control byte is 0xff
	MOVQ 32(SI), R12
	MOVQ 56(SI), R13
	// Ask for the group's four slot lines now, while its control word
	// loads: which slot to read is known only once that word is in, so
	// without this a lookup whose tuple is out of cache waits for two
	// misses in a row (control word, then slot) instead of about one.
	// The hint costs the lines of groups that hold no match (fw1_100k
	// probes three tuples a lookup and matches in one), yet lookups were
	// about 10% faster on every 100k set.
	MOVQ DX, AX
	SHLQ $8, AX             // 8 slots of 32 bytes a group
	ADDQ R13, AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)

	PCALIGN $32
group:
	MOVQ (R12)(DX*8), X0
	MOVO X0, X2
	PCMPEQB X1, X0
	PMOVMSKB X0, CX         // bit i: slot i's byte holds the pattern
	TESTL CX, CX
	JNE  candidates

probed:
	PCMPEQB X3, X2
	PMOVMSKB X2, AX         // an empty byte ends the key's chain
	TESTL AX, AX
	JNE  next
	INCQ DX
	CMPQ DX, 24(SI)
	JNE  group
	XORQ DX, DX
	JMP  group

next:
	ADDQ $96, SI
	JMP  tuple

candidates:
	MOVQ CX, R15

candidate:
	BSFQ R15, AX
	LEAQ (AX)(DX*8), AX
	SHLQ $5, AX
	ADDQ R13, AX            // the slot
	MOVQ 0(AX), BX
	CMPQ BX, R8
	JCC  nextcandidate      // rank >= best
	// rslot.miss: addresses, ports, protocol.
	MOVQ 8(AX), BX
	XORQ R9, BX
	MOVL BX, R14
	SHRQ $32, BX
	MOVBLZX 24(AX), CX
	SHRQ CX, R14
	MOVBLZX 25(AX), CX
	SHRQ CX, BX
	ORQ  BX, R14
	MOVWLZX 72(DI), BX
	SUBW 16(AX), BX
	MOVWLZX BX, BX
	MOVWLZX 18(AX), CX
	SUBL BX, CX
	SHRL $16, CX
	ORQ  CX, R14
	MOVWLZX 74(DI), BX
	SUBW 20(AX), BX
	MOVWLZX BX, BX
	MOVWLZX 22(AX), CX
	SUBL BX, CX
	SHRL $16, CX
	ORQ  CX, R14
	MOVBLZX 54(DI), BX
	ANDB 27(AX), BX
	XORB 26(AX), BX
	MOVBLZX BX, BX
	ORQ  BX, R14
	JNE  nextcandidate
	MOVL 28(AX), BX
	TESTL $0x7fffffff, BX
	JNE  stop               // the rule is not all in the slot: lookupAny goes on
	MOVQ 0(AX), R8
	TESTL BX, BX
	JPL  nextcandidate      // not final
	MOVQ R8, BX
	SHRQ $32, BX
	CMPL BX, 20(SI)
	JCC  nextcandidate      // precedence >= fin: the flag no longer holds
	LEAQ 96(SI), R10        // final: finish this tuple, then stop

nextcandidate:
	LEAQ -1(R15), BX
	ANDQ BX, R15
	JNE  candidate
	JMP  probed

	// Keys of the other kinds lookup4 probes, kept out of the kindAddr4
	// path, which stays as it was. kindAddr4P (gridPorts) adds the
	// destination port to the addresses: portKey.
otherkind:
	CMPB 16(SI), $2
	JEQ  portskey
	CMPB 16(SI), $3         // kindAddr4P
	JNE  stop
	MOVQ 8(SI), AX
	ANDQ R9, AX
	ROLQ $32, AX
	MOVWLZX 74(DI), BX
	MOVQ $0xd6e8feb86659fd93, CX
	IMULQ CX, BX
	XORQ BX, AX
	JMP  keyed

	// kindPorts (a split's level): ((sport<<16 | dport) & ms) << 16 |
	// ((proto<<8 | QFI) & md).
portskey:
	MOVL 72(DI), AX         // dport<<16 | sport
	ROLL $16, AX
	ANDL 8(SI), AX
	SHLQ $16, AX
	MOVBLZX 54(DI), BX
	SHLL $8, BX
	MOVBLZX 52(DI), CX
	ORL  CX, BX
	ANDL 12(SI), BX
	ORQ  BX, AX
	JMP  keyed

finished:
	MOVQ R8, b+32(FP)
	MOVQ n+8(FP), AX
	MOVQ AX, i+40(FP)
	RET

stop:
	MOVQ R8, b+32(FP)
	MOVQ SI, AX
	SUBQ list+0(FP), AX
	XORQ DX, DX
	MOVQ $96, CX
	DIVQ CX
	MOVQ AX, i+40(FP)
	RET
