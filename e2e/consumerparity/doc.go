// Package consumerparity is the e2e suite of the keyroute consumer's
// options that match pulsar-client-go's ConsumerOptions, each checked on
// real local Pulsar clusters with what keyroute's producer writes:
//
//   - Decryption: messages the producer encrypted (its Encryption option)
//     are read back in clear with the private key; with a key that cannot
//     read them, CryptoConsume delivers the ciphertext with its encryption
//     context and CryptoDiscard delivers nothing and acknowledges them;
//   - Schema and Typed[T]: values the producer's Typed[T] sent with a JSON
//     schema are read back as the same values;
//   - positions (StartAfter, SeekByID): a fresh consumer resumes exactly
//     after the IDs a first one saved, on the same or a new subscription,
//     and a running one sought back to an ID reads that partition again
//     from just after it, with and without batches.
package consumerparity
