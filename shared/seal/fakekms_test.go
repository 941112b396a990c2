package seal

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// fakeKMS is an in-memory KMS holding one master key: it wraps data keys
// with AES-GCM under the master key, authenticating the key ID and the
// encryption context, and answers Decrypt for anything else as real KMS
// does (InvalidCiphertextException, IncorrectKeyException).
type fakeKMS struct {
	keyID  string
	master cipher.AEAD

	mu sync.Mutex
	// genErr and decErr, when set, are returned instead of answering.
	genErr, decErr error
	// genGate, when set, makes GenerateDataKey signal genEntered and
	// block until genGate is closed.
	genGate    chan struct{}
	genEntered chan struct{}

	generateCalls, decryptCalls           int
	generateInFlight, maxGenerateInFlight int
	generateInputs                        []*kms.GenerateDataKeyInput
	decryptInputs                         []*kms.DecryptInput
}

func newFakeKMS(t testing.TB, keyID string) *fakeKMS {
	t.Helper()
	aead, err := newAEAD(randomKey(t))
	if err != nil {
		t.Fatalf("newAEAD: %v", err)
	}
	return &fakeKMS{keyID: keyID, master: aead}
}

// wrapAD is the additional data the fake binds a wrapped key to.
func wrapAD(keyID string, ec map[string]string) []byte {
	ad := []byte(keyID)
	for _, k := range slices.Sorted(maps.Keys(ec)) {
		ad = append(ad, 0)
		ad = append(ad, k...)
		ad = append(ad, 0)
		ad = append(ad, ec[k]...)
	}
	return ad
}

func (f *fakeKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	f.mu.Lock()
	f.generateCalls++
	f.generateInFlight++
	f.maxGenerateInFlight = max(f.maxGenerateInFlight, f.generateInFlight)
	f.generateInputs = append(f.generateInputs, in)
	gate, entered, genErr := f.genGate, f.genEntered, f.genErr
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.generateInFlight--
		f.mu.Unlock()
	}()

	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if genErr != nil {
		return nil, genErr
	}
	if aws.ToString(in.KeyId) != f.keyID {
		return nil, &types.NotFoundException{Message: aws.String("no such key")}
	}
	if in.KeySpec != types.DataKeySpecAes256 {
		return nil, fmt.Errorf("fake kms: KeySpec %q, want AES_256", in.KeySpec)
	}
	plaintext := make([]byte, 32)
	rand.Read(plaintext)
	blob := f.master.Seal(nil, nil, plaintext, wrapAD(f.keyID, in.EncryptionContext))
	return &kms.GenerateDataKeyOutput{KeyId: aws.String(f.keyID), Plaintext: plaintext, CiphertextBlob: blob}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.mu.Lock()
	f.decryptCalls++
	f.decryptInputs = append(f.decryptInputs, in)
	decErr := f.decErr
	f.mu.Unlock()

	if decErr != nil {
		return nil, decErr
	}
	if aws.ToString(in.KeyId) != f.keyID {
		return nil, &types.IncorrectKeyException{Message: aws.String("wrong key")}
	}
	plaintext, err := f.master.Open(nil, nil, in.CiphertextBlob, wrapAD(f.keyID, in.EncryptionContext))
	if err != nil {
		return nil, &types.InvalidCiphertextException{Message: aws.String("invalid ciphertext")}
	}
	return &kms.DecryptOutput{KeyId: aws.String(f.keyID), Plaintext: plaintext}, nil
}

// counts returns how many GenerateDataKey and Decrypt calls were made.
func (f *fakeKMS) counts() (generate, decrypt int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.generateCalls, f.decryptCalls
}

// newTestKMS returns the concrete KMS Sealer so tests can set its limits.
func newTestKMS(t testing.TB, f *fakeKMS) *kmsSealer {
	t.Helper()
	return NewKMS(f, f.keyID).(*kmsSealer)
}

func randomKey(t testing.TB) []byte {
	t.Helper()
	key := make([]byte, keySize)
	rand.Read(key)
	return key
}
