"""``/admin/v2/clusters`` and ``/admin/v2/tenants``: the one cluster and the tenants."""

from __future__ import annotations

from .base import AdminResource, guarded


class ClustersHandler(AdminResource):
    @guarded
    async def get(self) -> None:
        self.reply(await self.run("clusters.get_clusters"))


class ClusterHandler(AdminResource):
    @guarded
    async def get(self, cluster: str) -> None:
        data = await self.run("clusters.get_cluster", cluster=cluster)
        # ClusterDataImpl's non-null defaults, which Pulsar's answer carries too (the TLS
        # client settings of a cluster that does not use TLS; 4.0 adds the SSL factory)
        data = {**data, "brokerClientTlsEnabled": False, "tlsAllowInsecureConnection": False,
                "brokerClientTlsEnabledWithKeyStore": False,
                "brokerClientTlsTrustStoreType": "JKS", "brokerClientTlsKeyStoreType": "JKS"}
        if self.broker.settings.version().at_least(4, 0):
            data["brokerClientSslFactoryPlugin"] = (
                "org.apache.pulsar.common.util.DefaultPulsarSslFactory")
        self.reply(data)


class TenantsHandler(AdminResource):
    @guarded
    async def get(self) -> None:
        self.reply(await self.run("tenants.get_tenants"))


class TenantHandler(AdminResource):
    """GET the TenantInfo, PUT creates, POST updates, DELETE (``?force=true``) deletes."""

    @guarded
    async def get(self, tenant: str) -> None:
        self.reply(await self.run("tenants.get_tenant_info", tenant=tenant))

    @guarded
    async def put(self, tenant: str) -> None:
        self.reply(await self.run("tenants.create_tenant", tenant=tenant, config=self.body()))

    @guarded
    async def post(self, tenant: str) -> None:
        self.reply(await self.run("tenants.update_tenant", tenant=tenant, config=self.body()))

    @guarded
    async def delete(self, tenant: str) -> None:
        self.reply(await self.run("tenants.delete_tenant", tenant=tenant,
                                  force=self.flag("force")))
