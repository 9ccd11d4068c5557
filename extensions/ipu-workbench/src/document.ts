/**
 * Reading an "ipu-workbench/ir" document: parsed, checked against the JSON schema the Python export
 * writes to (workbench/export/ir.schema.json, compiled at build time), then checked for references the
 * schema cannot express. Anything wrong is one `DocumentError` saying where and what.
 */
import { IrDocument } from './generated/document.js';
import { validate as matchesSchema } from './generated/validate.js';
import { checkReferences } from './references.js';

export const SCHEMA_NAME = 'ipu-workbench/ir';
export const SCHEMA_VERSION = 1;

export class DocumentError extends Error {}

interface SchemaError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

const schemaCheck = matchesSchema as unknown as ((data: unknown) => boolean) & { errors?: SchemaError[] | null };

/** The document in `value` (an object, or its JSON text), or a `DocumentError` saying what is wrong. */
export function readDocument(value: unknown): IrDocument {
  const data = typeof value === 'string' ? parse(value) : value;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new DocumentError(`expected an "${SCHEMA_NAME}" JSON object, got ${describe(data)}`);
  }
  const claimed = data as { schema?: unknown; version?: unknown };
  if (claimed.schema !== SCHEMA_NAME) {
    throw new DocumentError(`expected schema "${SCHEMA_NAME}", got ${JSON.stringify(claimed.schema) ?? 'none'}`);
  }
  if (claimed.version !== SCHEMA_VERSION) {
    throw new DocumentError(`this viewer reads version ${SCHEMA_VERSION} of "${SCHEMA_NAME}", got version ` +
      `${JSON.stringify(claimed.version) ?? 'none'}`);
  }
  if (!schemaCheck(data)) {
    throw new DocumentError(schemaMessage(schemaCheck.errors?.[0]));
  }
  const document = data as IrDocument;
  const problem = checkReferences(document);
  if (problem !== null) {
    throw new DocumentError(problem);
  }
  return document;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new DocumentError(`the text is not JSON (${(error as Error).message})`);
  }
}

/** `/graphs/0/ops/1` as `graphs[0].ops[1]`. */
export function fieldPath(pointer: string): string {
  const parts = pointer.split('/').slice(1).map(part => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  return parts.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

function schemaMessage(error: SchemaError | undefined): string {
  if (error === undefined) {
    return 'the document does not match the schema';
  }
  const where = fieldPath(error.instancePath) || 'the document';
  const params = error.params;
  if (error.keyword === 'enum') {
    return `${where} must be one of ${(params.allowedValues as unknown[]).map(v => JSON.stringify(v)).join(', ')}`;
  }
  if (error.keyword === 'const') {
    return `${where} must be ${JSON.stringify(params.allowedValue)}`;
  }
  if (error.keyword === 'required') {
    return `${where} has no "${String(params.missingProperty)}"`;
  }
  return `${where} ${error.message ?? 'does not match the schema'}`;
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value;
}
