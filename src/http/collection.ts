import type { Principal } from './access.js';
import type { ListResult, Page } from './list.js';

/**
 * The five operations of a collection of records (an area's CRUD routes), declared once so that every
 * area spells them alike. The actor always comes first; who it is depends on how the collection is
 * guarded. `T` is the record, `C` and `U` the create and update bodies, `F` the list filters, `R` what
 * a remove answers.
 */

/**
 * A collection the routes' scopes guard whole: reads take no actor; a write takes the acting user's
 * id, which becomes the row's `updated_by`.
 */
export interface Collection<T, C, U, F, R = { status: 'deleted' }> {
  create(userId: string, body: C): Promise<T>;
  list(page: Page, filters: F): Promise<ListResult<T>>;
  /** 404 when there is no active record `id`. */
  get(id: string): Promise<T>;
  update(userId: string, id: string, body: U): Promise<T>;
  remove(userId: string, id: string): Promise<R>;
}

/**
 * A collection guarded record by record (folder and questionnaire permissions, docs/platform.md
 * "Permissions"): every operation takes the principal.
 */
export interface GuardedCollection<T, C, U, F, R> {
  /** The record as `principal` may see it: 404 when it cannot, exactly as for a missing one. */
  get(principal: Principal, id: string): Promise<T>;
  /** The records `principal` may see, filtered; the total counts those only. */
  list(principal: Principal, page: Page, filters: F): Promise<ListResult<T>>;
  create(principal: Principal, body: C): Promise<T>;
  update(principal: Principal, id: string, body: U): Promise<T>;
  remove(principal: Principal, id: string): Promise<R>;
}
