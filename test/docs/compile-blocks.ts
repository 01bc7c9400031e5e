// Type-checks doc code blocks with the TypeScript compiler API: one program for every block, as a
// user's project would see them — `nightshift` and `nightshift/testing` resolve to src/ through the
// `paths` of tsconfig.json, every other import to node_modules. The blocks are files of an
// in-memory project in test/.doc-blocks/ (nothing is written to disk): module resolution walks up
// to the repository's package.json (ESM, top-level await allowed) and node_modules, and a block of
// CONTRIBUTING.md imports the test support as a test file in test/<area>/ does ('../support/…').
import ts from 'typescript';
import { ROOT, type DocBlock } from './doc-blocks.js';

/** Where a block's compiled file lives in the in-memory project. */
export const BLOCKS_DIR = `${ROOT}test/.doc-blocks/`;
export const PRELUDE = `${ROOT}test/docs/prelude.ts`;

export interface BlockResult {
  block: DocBlock;
  /** One line per error: `docs/jobs.md:41:7 TS2304 Cannot find name 'x'.` */
  errors: string[];
}

function compilerOptions(): ts.CompilerOptions {
  const file = ts.readConfigFile(`${ROOT}tsconfig.json`, (p) => ts.sys.readFile(p));
  if (file.error) throw new Error(ts.flattenDiagnosticMessageText(file.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(file.config, ts.sys, ROOT);
  return { ...parsed.options, noEmit: true, declaration: false, sourceMap: false, incremental: false };
}

/** The names test/docs/prelude.ts exports. */
const PRELUDE_NAMES = ['ns', 'sendReceipt'];

/** Names a block declares or imports at its top level: the prelude must not shadow them. */
function topLevelNames(code: string): Set<string> {
  const names = new Set<string>();
  const add = (n: ts.BindingName | ts.Identifier | undefined) => {
    if (!n) return;
    if (ts.isIdentifier(n)) names.add(n.text);
    else for (const e of n.elements) if (!ts.isOmittedExpression(e)) add(e.name);
  };
  for (const st of ts.createSourceFile('block.ts', code, ts.ScriptTarget.Latest).statements) {
    if (ts.isVariableStatement(st)) st.declarationList.declarations.forEach((d) => add(d.name));
    else if (ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isEnumDeclaration(st)) add(st.name);
    else if (ts.isImportDeclaration(st) && st.importClause) {
      add(st.importClause.name);
      const b = st.importClause.namedBindings;
      if (b && ts.isNamespaceImport(b)) add(b.name);
      if (b && ts.isNamedImports(b)) b.elements.forEach((e) => add(e.name));
    }
  }
  return names;
}

/** The block as a module: one line importing the prelude names it does not declare, then the block. */
function blockSource(block: DocBlock): string {
  const own = topLevelNames(block.code);
  const names = PRELUDE_NAMES.filter((n) => !own.has(n));
  // Always exactly one line before the block, so its line n is the file's line n + 1.
  return `import { ${names.join(', ')} } from '../docs/prelude.js';\n${block.code}\nexport {};\n`;
}

/** The file name of a block: its doc and line, so a stack or a message names where it came from. */
function blockFile(block: DocBlock): string {
  return `${BLOCKS_DIR}${block.doc.replace(/[/.]/g, '_')}_L${block.fenceLine}.ts`;
}

/**
 * Compiles every block in one program and returns each block's errors, positioned in its doc.
 * Every block is a module of its own (an `export {}` is appended), so blocks never see each
 * other's names — only the prelude's, imported by a first line added to each.
 */
export function compileBlocks(blocks: DocBlock[]): { results: BlockResult[]; prelude: string[]; files: string[] } {
  const options = compilerOptions();
  const sources = new Map(blocks.map((b) => [blockFile(b), blockSource(b)]));
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (f) => sources.has(f) || fileExists.call(host, f);
  host.readFile = (f) => sources.get(f) ?? readFile.call(host, f);
  host.getSourceFile = (f, lang, onError, create) => {
    const text = sources.get(f);
    return text === undefined ? getSourceFile.call(host, f, lang, onError, create) : ts.createSourceFile(f, text, lang, true);
  };
  const program = ts.createProgram({ rootNames: [PRELUDE, ...sources.keys()], options, host });

  const format = (d: ts.Diagnostic, at: (line: number, col: number) => string) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (!d.file || d.start === undefined) return `TS${d.code} ${text}`;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${at(line, character)} TS${d.code} ${text}`;
  };
  const diagnostics = (file: string) => {
    const sf = program.getSourceFile(file);
    if (!sf) throw new Error(`not in the program: ${file}`);
    return [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
  };

  const results = blocks.map((block) => ({
    block,
    // Line n (0-based) of the file is line n - 1 of the block, and line fenceLine + n of the doc.
    errors: diagnostics(blockFile(block)).map((d) => format(d, (line, col) => `${block.doc}:${block.fenceLine + line}:${col + 1}`)),
  }));
  const prelude = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics(), ...diagnostics(PRELUDE)].map((d) => format(d, (line, col) => `test/docs/prelude.ts:${line + 1}:${col + 1}`));
  return { results, prelude, files: program.getSourceFiles().map((f) => f.fileName) };
}
