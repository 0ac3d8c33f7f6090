export interface Validator {
  validate(token: string): boolean;
}

export type Claims = Record<string, string>;

export enum Scope {
  Read,
  Write,
}

export class TokenService implements Validator {
  #secret = "";

  validate(token: string): boolean {
    return token.length > 0;
  }

  private refresh(): void {}
}

export abstract class Base {
  abstract check(): void;
}

export function validateToken(token: string): boolean {
  return token !== "";
}

export const parseClaims = (raw: string): Claims => JSON.parse(raw);
