'use strict';
// The only way serverless.yml reaches a build: `${file(./infra/aws/verified-build.js):SECTION}`.
//
// Serverless Framework v3 calls this while it resolves variables, before it packages or uploads anything. It
// returns the sections `outpost package --env <stage>` generated (build/<stage>/deployment.json) only when:
// - an explicit `--stage` was given, it is a valid environment name, and not `local` (the sandbox's, never
//   deployed);
// - that stage has a build for AWS;
// - the build is current: the SHA-256 of every input it was made from (pyproject.toml, the environment file
//   infra/environments/<stage>.yaml, every file under shared/outpost/, functions/ and infra/locks/, the
//   dependency locks, except byte code) is the one recorded, so an environment file edited (perhaps made
//   invalid), a source or a lock changed since `outpost package` is refused, naming what changed;
// - the bundle is the one built (its SHA-256 is the recorded one);
// - a `--region` option, if given, is the region the environment file deploys to.
// Otherwise it throws, and the Serverless Framework stops with the message. The walk below must select the
// same files as outpost.tooling.packaging.records.source_inputs (tests/functional/test_deployment.py holds them
// together).

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const NAME = /^[a-z][a-z0-9-]*$/;
const NOT_DEPLOYABLE = new Set(['local']);
const SOURCE_DIRECTORIES = ['shared/outpost', 'functions', 'infra/locks'];
const SOURCE_FILES = ['pyproject.toml'];
const BYTE_CODE = /\.py[co]$/;

function sha256(data) {
  return crypto.createHash('sha256').update(data).digest('hex');
}

function walk(relative, found) {
  const absolute = path.join(ROOT, relative);
  if (!fs.existsSync(absolute)) return;
  for (const entry of fs.readdirSync(absolute, { withFileTypes: true })) {
    const child = `${relative}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== '__pycache__') walk(child, found);
    } else if (!BYTE_CODE.test(entry.name) && fs.statSync(path.join(ROOT, child)).isFile()) {
      found.push(child);
    }
  }
}

function currentInputs(stage) {
  const files = [...SOURCE_FILES, `infra/environments/${stage}.yaml`];
  for (const directory of SOURCE_DIRECTORIES) walk(directory, files);
  const inputs = {};
  for (const file of files.filter((f) => fs.existsSync(path.join(ROOT, f))).sort()) {
    inputs[file] = sha256(fs.readFileSync(path.join(ROOT, file)));
  }
  return inputs;
}

function digest(inputs) {
  return sha256(Object.keys(inputs).sort().map((name) => `${inputs[name]}  ${name}\n`).join(''));
}

function refuse(message) {
  const error = new Error(`Outpost refuses to deploy: ${message}`);
  error.stack = error.message; // the reason is the message; a stack trace only buries it
  throw error;
}

function verifiedBuild(options) {
  const stage = options.stage;
  if (!stage) refuse('give the stage explicitly (--stage <environment>); there is no default stage');
  if (!NAME.test(stage) || stage.length > 63) refuse(`stage ${JSON.stringify(stage)} is not an environment name`);
  if (NOT_DEPLOYABLE.has(stage)) refuse(`stage ${stage} is the local sandbox's environment and is never deployed`);
  const file = path.join(ROOT, 'build', stage, 'deployment.json');
  if (!fs.existsSync(file)) refuse(`no build for stage ${stage}: run \`outpost package --env ${stage}\` first`);
  const deployment = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (deployment.environment !== stage) refuse(`build/${stage} was built for ${deployment.environment}`);
  if (!deployment.serverless) refuse(`build/${stage} is not an AWS build (deploy.platform)`);
  const recorded = deployment.build.inputs;
  const inputs = currentInputs(stage);
  if (digest(inputs) !== deployment.build.inputs_sha256 || digest(recorded) !== deployment.build.inputs_sha256) {
    const names = [...new Set([...Object.keys(recorded), ...Object.keys(inputs)])].sort();
    const changed = names.filter((name) => recorded[name] !== inputs[name]);
    refuse(`build/${stage} is stale: ${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ' ...' : ''} `
      + `changed since it was built; run \`outpost package --env ${stage}\` again`);
  }
  const artifact = path.resolve(ROOT, deployment.serverless.artifact);
  if (!fs.existsSync(artifact) || sha256(fs.readFileSync(artifact)) !== deployment.build.artifact_sha256) {
    refuse(`the bundle ${deployment.serverless.artifact} is not the one built for stage ${stage}; `
      + `run \`outpost package --env ${stage}\` again`);
  }
  if (options.region && options.region !== deployment.serverless.region) {
    refuse(`--region ${options.region}: infra/environments/${stage}.yaml deploys to ${deployment.serverless.region}`);
  }
  return deployment.serverless;
}

// Serverless calls the export once per reference; the verification is cheap (a few hundred small files).
module.exports = async ({ options }) => verifiedBuild(options);
