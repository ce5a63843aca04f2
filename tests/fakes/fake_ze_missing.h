/* FAKE_ZE_TRACE_MISSING=1: every entry point a table of this fake leaves
 * empty is filled with a stub that logs "MISSING <table> <slot>" (the
 * slot's index in the table's struct of ze_ddi.h, zet_ddi.h or zes_ddi.h)
 * and answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: how one finds what a
 * runtime asks of a driver (make check-xpu's adapter).  Off, the tables
 * keep their empty slots, as the hooks' tests expect.  Also the tables this
 * fake does not implement (STUB): present, empty. */
#define MISSING_MAX 1024
static struct {
	const char *table;
	int slot;
} missing_at[MISSING_MAX];
static int nmissing;

/* k: "1" then five base-4 digits, written in decimal */
static ze_result_t missing_hit(long k)
{
	int i = 0;
	for (long m = 10000; m; m /= 10)
		i = i * 4 + (int)(k / m % 10);
	logf_("MISSING %s %d", missing_at[i].table, missing_at[i].slot);
	return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

#define MS1(k) static ze_result_t missing_##k(void) { return missing_hit(k); }
#define MS4(k) MS1(k##0) MS1(k##1) MS1(k##2) MS1(k##3)
#define MS16(k) MS4(k##0) MS4(k##1) MS4(k##2) MS4(k##3)
#define MS64(k) MS16(k##0) MS16(k##1) MS16(k##2) MS16(k##3)
#define MS256(k) MS64(k##0) MS64(k##1) MS64(k##2) MS64(k##3)
MS256(10) MS256(11) MS256(12) MS256(13)
#define MP1(k) missing_##k,
#define MP4(k) MP1(k##0) MP1(k##1) MP1(k##2) MP1(k##3)
#define MP16(k) MP4(k##0) MP4(k##1) MP4(k##2) MP4(k##3)
#define MP64(k) MP16(k##0) MP16(k##1) MP16(k##2) MP16(k##3)
#define MP256(k) MP64(k##0) MP64(k##1) MP64(k##2) MP64(k##3)
static ze_result_t (*const missing_fns[])(void) = {
	MP256(10) MP256(11) MP256(12) MP256(13)
};

/* Fill the empty slots of table t (n bytes) with logging stubs. */
static void fill_missing(const char *table, void *t, size_t n)
{
	const char *e = getenv("FAKE_ZE_TRACE_MISSING");
	if (!e || *e != '1')
		return;
	void **slot = t;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n / sizeof(void *); i++)
		if (!slot[i] && nmissing < MISSING_MAX) {
			missing_at[nmissing].table = table;
			missing_at[nmissing].slot = (int)i;
			slot[i] = (void *)missing_fns[nmissing++];
		}
	pthread_mutex_unlock(&mu);
}

/* The tables this fake does not implement: present, empty. */
#define STUB(fn, type)                                                        \
	ZE_DLLEXPORT ze_result_t ZE_APICALL fn(ze_api_version_t v, type *t)   \
	{                                                                     \
		(void)v;                                                      \
		memset(t, 0, sizeof(*t));                                     \
		fill_missing(#fn, t, sizeof(*t));                             \
		return ZE_RESULT_SUCCESS;                                     \
	}
STUB(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
STUB(zeGetImageProcAddrTable, ze_image_dditable_t)
STUB(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
STUB(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
STUB(zeGetModuleProcAddrTable, ze_module_dditable_t)
STUB(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
STUB(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
STUB(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
STUB(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
STUB(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
STUB(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
STUB(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
STUB(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
STUB(zetGetDeviceProcAddrTable, zet_device_dditable_t)
STUB(zetGetContextProcAddrTable, zet_context_dditable_t)
STUB(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
STUB(zetGetModuleProcAddrTable, zet_module_dditable_t)
STUB(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
STUB(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
STUB(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
STUB(zetGetMetricProcAddrTable, zet_metric_dditable_t)
STUB(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
STUB(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
STUB(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
STUB(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
STUB(zetGetDebugProcAddrTable, zet_debug_dditable_t)
STUB(zesGetDriverProcAddrTable, zes_driver_dditable_t)
STUB(zesGetDeviceProcAddrTable, zes_device_dditable_t)
STUB(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
STUB(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
STUB(zesGetPowerProcAddrTable, zes_power_dditable_t)
STUB(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
STUB(zesGetEngineProcAddrTable, zes_engine_dditable_t)
STUB(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
STUB(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
STUB(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
STUB(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
STUB(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
STUB(zesGetPsuProcAddrTable, zes_psu_dditable_t)
STUB(zesGetFanProcAddrTable, zes_fan_dditable_t)
STUB(zesGetLedProcAddrTable, zes_led_dditable_t)
STUB(zesGetRasProcAddrTable, zes_ras_dditable_t)
STUB(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
