/** What the pages know of the signed-in person. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me } from './types.ts';

export type SessionState = { status: 'loading' } | { status: 'signed-out'; error?: string | undefined } | { status: 'signed-in'; me: Me };

/** The person signed in and a way to read it again. */
export const SessionContext = createContext<{ me: Me; reload: () => Promise<void> } | undefined>(undefined);

/** The signed-in person; only pages under the signed-in shell use it. */
export function useSession(): { me: Me; reload: () => Promise<void> } {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside the signed-in shell');
  return session;
}

/** Whether `participantId` is one of the signed-in person's humans (shown as "You", "(you)"). */
export function isMine(me: Me, participantId: string): boolean {
  return me.humans.some((h) => h.human_id === participantId);
}
