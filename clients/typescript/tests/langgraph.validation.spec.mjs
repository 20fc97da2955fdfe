// LangGraph's own checkpointer validation suite
// (@langchain/langgraph-checkpoint-validation: getTuple, list, put,
// putWrites, deleteThread, and the opt-in getDeltaChannelHistory
// conformance) against SidecarCheckpointSaver on the sidecar under test.
// Vitest runs it (the package's runner; its CLI cannot load an initializer
// in 1.1.1: its schema is missing from the build); langgraph.test.mjs starts
// it under node --test.
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import initializer from "./langgraph_initializer.mjs";

validate(initializer);
deltaChannelHistoryTests(initializer);
