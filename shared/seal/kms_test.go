package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/letagents/letagents-go/shared/testclock"
)

// wrappedKey returns the wrapped data key in a KMS sealed value.
func wrappedKey(t *testing.T, sealed []byte) string {
	t.Helper()
	_, wrapped, _, err := splitKMS(sealed)
	if err != nil {
		t.Fatalf("splitKMS: %v", err)
	}
	return string(wrapped)
}

func TestKMSGenerateOnceForManySeals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeKMS(t, "alias/seal")
	s := NewKMS(f, f.keyID)

	var values [][]byte
	for i := range 100 {
		values = append(values, mustSeal(t, s, fmt.Appendf(nil, "token %d", i), nil))
	}
	for i, v := range values {
		if _, err := s.Open(ctx, v, nil); err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
	}
	gen, dec := f.counts()
	if gen != 1 {
		t.Errorf("GenerateDataKey calls for 100 Seals: got %d, want 1", gen)
	}
	if dec != 0 {
		t.Errorf("Decrypt calls for Opens by the Sealer that made the data key: got %d, want 0", dec)
	}
}

func TestKMSDecryptOncePerWrappedKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeKMS(t, "alias/seal")
	sealer := newTestKMS(t, f)
	sealer.maxSeals = 10

	// 30 values under 3 data keys.
	var values [][]byte
	wrapped := map[string]bool{}
	for i := range 30 {
		v := mustSeal(t, sealer, fmt.Appendf(nil, "token %d", i), nil)
		values = append(values, v)
		wrapped[wrappedKey(t, v)] = true
	}
	if got, want := len(wrapped), 3; got != want {
		t.Fatalf("distinct wrapped keys: got %d, want %d", got, want)
	}

	// A new Sealer (another Lambda instance) opens them all, repeatedly.
	opener := NewKMS(f, f.keyID)
	for range 5 {
		for i, v := range values {
			got, err := opener.Open(ctx, v, nil)
			if err != nil {
				t.Fatalf("Open #%d: %v", i, err)
			}
			if want := fmt.Sprintf("token %d", i); string(got) != want {
				t.Errorf("Open #%d: got %q, want %q", i, got, want)
			}
		}
	}
	if _, dec := f.counts(); dec != 3 {
		t.Errorf("Decrypt calls for 150 Opens under 3 data keys: got %d, want 3", dec)
	}
}

func TestKMSRotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// between runs after each Seal.
		between  func(clock *testclock.Clock)
		maxSeals int
		seals    int
		wantGen  int
	}{
		{"under both limits", func(*testclock.Clock) {}, 1 << 20, 50, 1},
		{"by count", func(*testclock.Clock) {}, 4, 10, 3},
		{"by count, exact", func(*testclock.Clock) {}, 5, 10, 2},
		{"by age", func(c *testclock.Clock) { c.Advance(6 * time.Hour) }, 1 << 20, 10, 3},
		{"just under age", func(c *testclock.Clock) { c.Advance(24*time.Hour - time.Nanosecond) }, 1 << 20, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFakeKMS(t, "alias/seal")
			clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s := newTestKMS(t, f)
			s.now = clock.Now
			s.maxSeals = tt.maxSeals

			var values [][]byte
			for i := range tt.seals {
				values = append(values, mustSeal(t, s, fmt.Appendf(nil, "token %d", i), nil))
				tt.between(clock)
			}
			if gen, _ := f.counts(); gen != tt.wantGen {
				t.Errorf("GenerateDataKey calls: got %d, want %d", gen, tt.wantGen)
			}
			// Values sealed under earlier data keys still open.
			for i, v := range values {
				if _, err := s.Open(ctx, v, nil); err != nil {
					t.Errorf("Open #%d after rotation: %v", i, err)
				}
			}
		})
	}
}

func TestKMSEncryptionContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeKMS(t, "arn:aws:kms:eu-west-1:111122223333:key/seal")
	sealed := mustSeal(t, NewKMS(f, f.keyID), []byte("gho_secret"), nil)
	if _, err := NewKMS(f, f.keyID).Open(ctx, sealed, nil); err != nil {
		t.Fatalf("Open: %v", err)
	}

	want := map[string]string{"purpose": "letagents-seal"}
	if got := len(f.generateInputs); got != 1 {
		t.Fatalf("GenerateDataKey calls: got %d, want 1", got)
	}
	gen := f.generateInputs[0]
	if got := aws.ToString(gen.KeyId); got != f.keyID {
		t.Errorf("GenerateDataKey KeyId: got %q, want %q", got, f.keyID)
	}
	if got := gen.KeySpec; got != types.DataKeySpecAes256 {
		t.Errorf("GenerateDataKey KeySpec: got %q, want %q", got, types.DataKeySpecAes256)
	}
	if got := gen.EncryptionContext; !maps.Equal(got, want) {
		t.Errorf("GenerateDataKey EncryptionContext: got %v, want %v", got, want)
	}
	if got := len(f.decryptInputs); got != 1 {
		t.Fatalf("Decrypt calls: got %d, want 1", got)
	}
	dec := f.decryptInputs[0]
	if got := aws.ToString(dec.KeyId); got != f.keyID {
		t.Errorf("Decrypt KeyId: got %q, want %q", got, f.keyID)
	}
	if got := dec.EncryptionContext; !maps.Equal(got, want) {
		t.Errorf("Decrypt EncryptionContext: got %v, want %v", got, want)
	}
	if got, want := dec.CiphertextBlob, []byte(wrappedKey(t, sealed)); !bytes.Equal(got, want) {
		t.Errorf("Decrypt CiphertextBlob: got %x, want the wrapped key %x", got, want)
	}
}

func TestKMSErrorsWrapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	unavailable := &types.KMSInternalException{Message: aws.String("try again")}

	t.Run("GenerateDataKey", func(t *testing.T) {
		t.Parallel()
		f := newFakeKMS(t, "alias/seal")
		f.genErr = unavailable
		s := NewKMS(f, f.keyID)
		_, err := s.Seal(ctx, []byte("gho_secret"), nil)
		if !errors.Is(err, unavailable) {
			t.Errorf("Seal: got %v, want it to wrap %v", err, unavailable)
		}
		if errors.Is(err, ErrCorrupt) {
			t.Errorf("Seal: got %v, want it not to match ErrCorrupt", err)
		}

		// A failure is not cached: the next Seal asks again.
		f.mu.Lock()
		f.genErr = nil
		f.mu.Unlock()
		if _, err := s.Seal(ctx, []byte("gho_secret"), nil); err != nil {
			t.Errorf("Seal after KMS recovered: %v", err)
		}
		if gen, _ := f.counts(); gen != 2 {
			t.Errorf("GenerateDataKey calls: got %d, want 2", gen)
		}
	})

	t.Run("Decrypt", func(t *testing.T) {
		t.Parallel()
		f := newFakeKMS(t, "alias/seal")
		sealed := mustSeal(t, NewKMS(f, f.keyID), []byte("gho_secret"), nil)
		f.decErr = unavailable
		s := NewKMS(f, f.keyID)
		_, err := s.Open(ctx, sealed, nil)
		if !errors.Is(err, unavailable) {
			t.Errorf("Open: got %v, want it to wrap %v", err, unavailable)
		}
		if errors.Is(err, ErrCorrupt) {
			t.Errorf("Open: got %v, want it not to match ErrCorrupt", err)
		}

		f.mu.Lock()
		f.decErr = nil
		f.mu.Unlock()
		if got, err := s.Open(ctx, sealed, nil); err != nil || string(got) != "gho_secret" {
			t.Errorf("Open after KMS recovered: got (%q, %v), want %q", got, err, "gho_secret")
		}
	})
}

func TestKMSBadDataKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		out  *generateOverride
	}{
		{"short data key", &generateOverride{plaintext: make([]byte, 16), blob: []byte("wrapped")}},
		{"empty wrapped key", &generateOverride{plaintext: make([]byte, 32), blob: nil}},
		{"huge wrapped key", &generateOverride{plaintext: make([]byte, 32), blob: make([]byte, 1<<16)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewKMS(tt.out, "alias/seal")
			if got, err := s.Seal(ctx, []byte("gho_secret"), nil); err == nil {
				t.Errorf("Seal: got %x, want an error", got)
			}
		})
	}
}

// generateOverride is a KMS that answers GenerateDataKey with fixed bytes.
type generateOverride struct {
	fakeKMS
	plaintext, blob []byte
}

func (g *generateOverride) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return &kms.GenerateDataKeyOutput{Plaintext: bytes.Clone(g.plaintext), CiphertextBlob: g.blob}, nil
}

func TestKMSCacheBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeKMS(t, "alias/seal")
	sealer := newTestKMS(t, f)
	sealer.maxSeals = 1

	const keys = dataKeyCacheSize + 6
	var values [][]byte
	for i := range keys {
		values = append(values, mustSeal(t, sealer, fmt.Appendf(nil, "token %d", i), nil))
	}
	sealer.mu.Lock()
	cached := len(sealer.cache)
	sealer.mu.Unlock()
	if cached != dataKeyCacheSize {
		t.Errorf("cached data keys after %d: got %d, want %d", keys, cached, dataKeyCacheSize)
	}

	opener := newTestKMS(t, f)
	for i, v := range values {
		if _, err := opener.Open(ctx, v, nil); err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
	}
	_, before := f.counts()
	if before != keys {
		t.Fatalf("Decrypt calls: got %d, want %d", before, keys)
	}
	// The newest are cached; the oldest were evicted and cost a Decrypt.
	if _, err := opener.Open(ctx, values[keys-1], nil); err != nil {
		t.Fatalf("Open newest: %v", err)
	}
	if _, dec := f.counts(); dec != before {
		t.Errorf("Decrypt calls after opening the newest again: got %d, want %d", dec, before)
	}
	if _, err := opener.Open(ctx, values[0], nil); err != nil {
		t.Fatalf("Open oldest: %v", err)
	}
	if _, dec := f.counts(); dec != before+1 {
		t.Errorf("Decrypt calls after opening the oldest again: got %d, want %d", dec, before+1)
	}
}

// The KMS tests of waiters run in a synctest bubble: synctest.Wait
// returns once every goroutine is blocked, so the waiters have surely
// lined up behind the call in flight, however slow the machine.

func TestKMSConcurrentFirstSeal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testKMSConcurrentFirstSeal)
}

func testKMSConcurrentFirstSeal(t *testing.T) {
	ctx := context.Background()
	f := newFakeKMS(t, "alias/seal")
	f.genGate = make(chan struct{})
	f.genEntered = make(chan struct{}, 100)
	s := NewKMS(f, f.keyID)

	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	values := make([][]byte, n)
	for i := range n {
		wg.Go(func() {
			values[i], errs[i] = s.Seal(ctx, []byte("gho_secret"), nil)
		})
	}
	synctest.Wait() // one Seal in GenerateDataKey, the others waiting for it
	if entered := len(f.genEntered); entered != 1 {
		t.Fatalf("%d GenerateDataKey calls entered while %d Seals waited, want 1", entered, n)
	}
	close(f.genGate)
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Fatalf("Seal #%d: %v", i, err)
		}
	}
	if gen, _ := f.counts(); gen != 1 {
		t.Errorf("GenerateDataKey calls for %d concurrent first Seals: got %d, want 1", n, gen)
	}
	if f.maxGenerateInFlight != 1 {
		t.Errorf("concurrent GenerateDataKey calls: got %d, want 1", f.maxGenerateInFlight)
	}
	for i, v := range values {
		if got, want := wrappedKey(t, v), wrappedKey(t, values[0]); got != want {
			t.Errorf("Seal #%d used another data key than Seal #0", i)
		}
	}
}

func TestKMSWaiterContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testKMSWaiterContext)
}

func testKMSWaiterContext(t *testing.T) {
	f := newFakeKMS(t, "alias/seal")
	f.genGate = make(chan struct{})
	f.genEntered = make(chan struct{}, 10)
	s := NewKMS(f, f.keyID)

	// The first Seal's KMS call hangs until its context is canceled.
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := s.Seal(leaderCtx, []byte("a"), nil)
		leaderErr <- err
	}()
	<-f.genEntered

	// A waiter gives up at its own deadline (on the bubble's clock).
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelWait()
	if _, err := s.Seal(waitCtx, []byte("b"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting Seal past its deadline: got %v, want context.DeadlineExceeded", err)
	}

	// A waiter whose context lives on retries when the first caller's
	// context is canceled, rather than inherit the cancellation.
	retryErr := make(chan error, 1)
	go func() {
		_, err := s.Seal(context.Background(), []byte("c"), nil)
		retryErr <- err
	}()
	synctest.Wait() // the retrying Seal waits for the leader's call
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled Seal: got %v, want context.Canceled", err)
	}
	<-f.genEntered // the retry's own call
	close(f.genGate)
	if err := <-retryErr; err != nil {
		t.Errorf("Seal after the first caller was canceled: %v", err)
	}
}

func TestKMSConcurrentSealOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeKMS(t, "alias/seal")
	clock := testclock.New(time.Now())
	sealer := newTestKMS(t, f)
	sealer.now = clock.Now
	sealer.maxSeals = 7
	sealer.cacheSize = 4
	opener := newTestKMS(t, f)
	opener.cacheSize = 4

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				plaintext := fmt.Appendf(nil, "token %d.%d", g, i)
				aad := fmt.Appendf(nil, "github_token:acct_%d", g)
				sealed, err := sealer.Seal(ctx, plaintext, aad)
				if err != nil {
					t.Errorf("Seal: %v", err)
					return
				}
				if i%10 == 0 {
					clock.Advance(time.Hour)
				}
				for _, s := range []Sealer{sealer, opener} {
					got, err := s.Open(ctx, sealed, aad)
					if err != nil {
						t.Errorf("Open: %v", err)
						return
					}
					if !bytes.Equal(got, plaintext) {
						t.Errorf("Open: got %q, want %q", got, plaintext)
					}
				}
			}
		})
	}
	wg.Wait()
	if f.maxGenerateInFlight != 1 {
		t.Errorf("concurrent GenerateDataKey calls: got %d, want 1", f.maxGenerateInFlight)
	}
}
