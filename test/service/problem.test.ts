import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../errors/catalogue.ts';
import { toProblem } from '../../service/http/problem.ts';

describe('problem documents', () => {
  it('problem: an unexpected error becomes 500 internal without its message or stack', () => {
    const { problem, unexpected } = toProblem(new Error('connection to postgres://admin:hunter2@db failed'), 'req-1');
    expect(unexpected).toBe(true);
    expect(problem).toEqual({
      type: 'urn:acs:error:internal',
      title: 'Internal error',
      status: 500,
      detail: 'an unexpected error occurred',
      code: 'internal',
      request_id: 'req-1',
    });
  });

  it('problem: a ServiceError keeps its detail, errors and extras but not over the standard members', () => {
    const error = new ServiceError('conflict', 'taken', { extra: { existing_id: 'x', status: 200 }, errors: [{ path: 'a', message: 'b' }] });
    const { problem } = toProblem(error, 'req-2');
    expect(problem).toMatchObject({ status: 409, code: 'conflict', detail: 'taken', existing_id: 'x', errors: [{ path: 'a', message: 'b' }] });
  });
});

describe('problem documents for storage', () => {
  it('problem: a database that cannot be reached becomes 503 unavailable', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(toProblem(refused, 'r').problem).toMatchObject({ status: 503, code: 'unavailable', detail: 'Unavailable' });
    const shutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    expect(toProblem(shutdown, 'r').problem.code).toBe('unavailable');
  });

  it('problem: a foreign key violation (a row deleted by a concurrent request) becomes 404 not_found, not a 500', () => {
    const gone = Object.assign(new Error('insert or update on table "teams" violates foreign key constraint "teams_org_id_fkey"'), { code: '23503' });
    const { problem, unexpected } = toProblem(gone, 'r');
    expect(unexpected).toBe(false);
    expect(problem).toMatchObject({ status: 404, code: 'not_found', detail: 'a resource this request names was deleted meanwhile' });
    expect(JSON.stringify(problem)).not.toContain('teams_org_id_fkey');
  });
});
