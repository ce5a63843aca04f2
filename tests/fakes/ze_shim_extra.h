/* The entry points newer than spec 1.4 that tests/fakes/ze_loader_shim.c
 * exports over Debian's loader 1.8 (the UR adapter calls these). */
#define ZE_SHIM_EXTRA(X)                                                      \
	X(zeDriverGetLastErrorDescription)                                    \
	X(zeDeviceGetRootDevice)                                              \
	X(zeCommandQueueGetOrdinal)                                           \
	X(zeCommandQueueGetIndex)                                             \
	X(zeCommandListHostSynchronize)                                       \
	X(zeCommandListGetDeviceHandle)                                       \
	X(zeCommandListGetContextHandle)                                      \
	X(zeCommandListGetOrdinal)                                            \
	X(zeCommandListImmediateGetIndex)                                     \
	X(zeCommandListIsImmediate)                                           \
	X(zeMemPutIpcHandle)                                                  \
	X(zeMemGetPitchFor2dImage)                                            \
	X(zeEventPoolPutIpcHandle)                                            \
	X(zeEventPoolGetContextHandle)                                        \
	X(zeEventPoolGetFlags)                                                \
	X(zeEventQueryKernelTimestampsExt)                                    \
	X(zeEventGetEventPool)                                                \
	X(zeEventGetSignalScope)                                              \
	X(zeEventGetWaitScope)                                                \
	X(zeImageViewCreateExt)
