/**
 * swerl: reinforcement learning for long-context, multi-turn software-engineering agents.
 * The public API; DESIGN.md section 6 lists the names other code relies on.
 */

export {
  type EpisodeDockerOptions,
  type EpisodeOptions,
  episodeReward,
  type Policy,
  runEpisode,
  type Trajectory,
  type Turn,
  turnPenalty,
} from './agent/episode.js';
export {
  type ActionFormat,
  type AgentMessage,
  COMPACT_ONE_SHOT_DEMONSTRATION,
  COMPACT_SYSTEM_PROMPT,
  issuePrompt,
  ONE_SHOT_DEMONSTRATION,
  oneShotDemonstration,
  type ParsedAction,
  type PromptStyle,
  parseAction,
  SYSTEM_PROMPT,
  scaffoldPrompts,
  shellPrompt,
  systemPrompt,
} from './agent/scaffold.js';
export { maskTimings, TIME_MASK } from './agent/timings.js';
export { type DeviceDtype, DeviceTensor } from './device-tensor.js';
export { copyPretrain } from './embedded/copy-pretrain.js';
export { demoSample, expertDemos, inForeignFormat } from './embedded/demonstrations.js';
export { slipPair, withFreshNames } from './embedded/fresh-names.js';
export { embeddedModelConfig } from './embedded/model.js';
export { bugWords, tokenizerCorpus } from './embedded/tokenizer-corpus.js';
export { embeddedWarmStart } from './embedded/warm-start.js';
export {
  Engine,
  type EngineOptions,
  type EngineStats,
  type GenerateRequest,
  type Generation,
  Session,
} from './engine/engine.js';
export { RemoteEngine, type RemoteEngineOptions, RemoteSession } from './engine/remote.js';
export { type DockerMount, DockerSandbox, type DockerSandboxOptions, dockerAvailable } from './env/docker-sandbox.js';
export {
  type EvaluateOptions,
  type Evaluation,
  type EvaluationOutcome,
  evaluatePatch,
  runAllTests,
  sweBenchImage,
  taskImage,
} from './env/evaluate.js';
export {
  closeEvaluationPool,
  type EvaluatePatchesOptions,
  type EvaluationJob,
  evaluatePatches,
} from './env/evaluate-pool.js';
export { expertPolicy, taskBug } from './env/mini-swe/expert.js';
export {
  BUG_KINDS,
  bugSplit,
  catalogueModules,
  generateMiniSweTasks,
  type MiniSweOptions,
} from './env/mini-swe/generate.js';
export { NAME_POOL } from './env/mini-swe/mutate.js';
export { PersistentShell, type Shell, type ShellOptions } from './env/persistent-shell.js';
export { patchPaths, protectedPathRule, protectedPathsIn } from './env/protected-paths.js';
export {
  defaultSandboxDir,
  type ExecResult,
  isolationAvailable,
  LocalSandbox,
  type SandboxOptions,
} from './env/sandbox.js';
export type { Sandbox } from './env/sandbox-api.js';
export { type ScreenVerdict, screenTask, screenTasks } from './env/screen.js';
export { type TestFamily, type TestSpec, testSpec } from './env/swe-bench/test-spec.js';
export { checkTask, checkTasks, filterTasksByPatch, loadTasks, patchSize, type SweTask } from './env/tasks.js';
export { type ErrorCode, ErrorCodes, SwerlError } from './errors.js';
export { type NativeInfo, nativeInfo } from './info.js';
export {
  type AppendResult,
  type KvCacheStats,
  type KvDtype,
  PagedKvCache,
  type PagedKvCacheOptions,
} from './kv/paged-kv-cache.js';
export { type HfModelConfig, normalizeConfig, type RopeScaling } from './model/config.js';
export {
  type BackwardOptions,
  Model,
  type ParameterInfo,
  type PolicyTrainSequence,
  type SaveOptions,
  type TrainSequence,
} from './model/model.js';
export { EMBEDDED_MODEL_CONFIG, QWEN2_5_0_5B_CONFIG } from './model/presets.js';
export {
  type DapoStageConfig,
  type DapoStageInput,
  loadConfig,
  type OptimizerConfig,
  type PipelineConfig,
  PRESETS,
  type PresetConfig,
  promptStyleOf,
  resolveConfig,
} from './pipeline/config.js';
export { checkpointName, dapoPhase, parseDapoPhase, validationPhase } from './pipeline/phases.js';
export { type RunOptions, type RunSummary, runPipeline, type StageSummary } from './pipeline/run.js';
export {
  type DapoExtras,
  dapoIteration,
  type EvalResult,
  episodeStats,
  evaluate,
  type Policy as TrainedPolicy,
  rft,
  type StageHooks,
  sftEpochs,
  shuffled,
} from './pipeline/stages.js';
export { type AdvantageEstimator, groupAdvantages } from './rl/advantages.js';
export { dapoIterationLr, dapoLossConfig } from './rl/loss-config.js';
export { lossMask, type PolicyBatch, type PolicySampleOptions, policySamples, rftSamples } from './rl/samples.js';
export { rolloutSeeds, type SampleSeedKey, sampleSeed } from './rl/seeds.js';
export { conversationTokens, deltaText, deltaTokens, promptText, promptTokens } from './rollout/chatml.js';
export {
  type RolloutRecord,
  type RolloutTurn,
  readRollouts,
  recordDivergence,
  writeRollouts,
} from './rollout/record.js';
export { type RolloutOptions, runRollouts } from './rollout/rollouts.js';
export { type SampleResult, type SamplingParams, sample, sampleAsync } from './sample.js';
export { type OpenAiServer, type OpenAiServerOptions, startOpenAiServer } from './serve/openai-server.js';
export { CHATML_SPECIAL_TOKENS, CHATML_TEMPLATE, type ChatMessage, Tokenizer } from './tokenizer/tokenizer.js';
export {
  AdamW,
  type AdamWOptions,
  constantLr,
  type LrSchedule,
  type StepResult,
  warmupCosineLr,
} from './train/adamw.js';
export {
  type AdamWDeviceConfig,
  type AdamWDeviceTensors,
  accumulateGradDevice,
  adamwStepDevice,
  clipGradNormDevice,
  gradNormDevice,
  zeroGradDevice,
} from './train/adamw-device.js';
export {
  type DeviceFusedLossOptions,
  type DeviceFusedPolicyLossResult,
  type DeviceFusedSftLossResult,
  type DeviceLmHeadInputs,
  type DeviceLossOutput,
  type DevicePolicyLossInputs,
  type DevicePolicyLossResult,
  type DeviceSftLossResult,
  type FusedLossOptions,
  type FusedPolicyLossResult,
  type FusedSftLossResult,
  type LmHeadInputs,
  type LossAggregation,
  type LossOutput,
  type PolicyLossConfig,
  type PolicyLossInputs,
  type PolicyLossResult,
  policyLoss,
  policyLossFused,
  type SftLossResult,
  sftLoss,
  sftLossFused,
} from './train/losses.js';
export { sequenceLogprobs } from './train/reference.js';
export {
  microBatches,
  type PolicySample,
  type StepMetrics,
  Trainer,
  type TrainerOptions,
  type TrainSample,
} from './train/trainer.js';
