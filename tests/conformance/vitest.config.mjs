// The suite's streams are independent: files run one at a time, tests as the package orders them.
export default { test: { include: ["conformance.test.mjs"], testTimeout: 30000, hookTimeout: 30000 } }
