import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Encrypts secrets at rest (provider keys, contract §3) with AES-256-GCM. */
export interface SecretBox {
  /** Encrypts `plaintext`; returns `base64(iv | tag | ciphertext)`. */
  seal(plaintext: string): string;
  /** Decrypts a value of {@link seal}. Errors: throws when the data was altered or the key differs. */
  open(sealed: string): string;
  /**
   * A 32-byte key of its own for `purpose` (HKDF-SHA256 of the encryption key, RFC 5869), so
   * that other uses of the key (opaque cursors) never share it with the sealing of secrets. The
   * same for every process that has the same encryption key.
   */
  deriveKey(purpose: string): Buffer;
}

/** A {@link SecretBox} over a 32-byte key. Errors: throws when the key is not 32 bytes. */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    },
    open(sealed) {
      const raw = Buffer.from(sealed, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
    deriveKey(purpose) {
      return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `acs-server:${purpose}`, 32));
    },
  };
}

const keyFileName = 'encryption.key';

/**
 * Finds the encryption key: `ACS_ENCRYPTION_KEY` (64 hex characters) when set; else the key file
 * in `dataDir`, created with a fresh random key on first start; else (in memory, nothing to keep)
 * a random key for this process.
 * Errors: throws when `ACS_ENCRYPTION_KEY` is set but not 64 hex characters.
 */
export async function resolveEncryptionKey(env: NodeJS.ProcessEnv, dataDir: string | undefined): Promise<Buffer> {
  const fromEnv = env.ACS_ENCRYPTION_KEY;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!/^[0-9a-fA-F]{64}$/.test(fromEnv)) throw new Error('ACS_ENCRYPTION_KEY must be 64 hex characters');
    return Buffer.from(fromEnv, 'hex');
  }
  if (dataDir === undefined) return randomBytes(32);
  const file = join(dataDir, keyFileName);
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/i.test(text)) return Buffer.from(text, 'hex');
    throw new Error(`${file} does not hold a 64 hex character key`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32);
  // With PostgreSQL the data dir holds only this file and may not exist yet.
  await mkdir(dataDir, { recursive: true });
  // 'wx' fails if another process created it meanwhile; then its key is the one to use.
  try {
    await writeFile(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return Buffer.from((await readFile(file, 'utf8')).trim(), 'hex');
  }
}
